// The console's object browser in a real browser (the rig of
// console_test.go): folders and pages of a bucket, each object's cached
// share checked against `granary status --object`, and its actions
// through the page: a pin shows as pinned (and status lists it), an
// evict drops the cached share to nothing (and status agrees), a
// download link yields the object, an unpin takes the pin away. In a
// cluster, an object's share is every member's, as status reports.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"

	"github.com/chromedp/chromedp"
	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/ops"
)

// browseKey is the object the browser test acts on: on the second page
// of models/ at 10 objects a page.
const browseKey = "models/ckpt-11"

// browse writes twelve objects under models/ of the shown bucket and
// works through them in the page.
func (r *consoleRig) browse(tab context.Context, cl *minio.Client) {
	body := bytes.Repeat([]byte("checkpoint "), 1000)
	for i := range 12 {
		key := fmt.Sprintf("models/ckpt-%02d", i)
		if _, err := cl.PutObject(context.Background(), shownBucket, key, bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
			r.t.Fatal(err)
		}
	}
	if got := r.download(cl, browseKey); !bytes.Equal(got, body) {
		r.t.Fatalf("reading %s: %d bytes", browseKey, len(got))
	}
	eventually(r.t, browseKey+" is cached", func() error {
		if o := r.status("--object", "s3://"+shownBucket+"/"+browseKey).Object; o == nil || o.Held != o.Size {
			return fmt.Errorf("held: %+v", o)
		}
		return nil
	})

	row := `document.querySelector('#objects tr[data-key="` + browseKey + `"]')`
	r.do(tab, "listing the bucket's folders",
		setField("browse-bucket", shownBucket), setField("browse-prefix", ""), setField("browse-size", "10"),
		chromedp.Click(`#browse-form button[type="submit"]`),
		waitJS(`document.querySelector('#objects tr[data-kind="prefix"][data-key="models/"]') !== null &&
			document.querySelector('#objects tr[data-kind="prefix"][data-key="train/"] td.pinned').textContent === 'pinned'`))
	r.shot(tab, "objects-root")
	r.do(tab, "opening models/ and its second page",
		chromedp.Click(`#objects button[data-open="models/"]`),
		waitJS(`document.querySelectorAll('#objects tr[data-kind="object"]').length === 10 && !document.getElementById('browse-next').disabled`),
		chromedp.Click("#browse-next"),
		waitJS(`document.querySelectorAll('#objects tr[data-kind="object"]').length === 2 && `+row+` !== null &&
			document.getElementById('browse-next').disabled && !document.getElementById('browse-prev').disabled`))
	if share := eval[float64](r, tab, `+`+row+`.querySelector('td.cached').dataset.value`); share != 1 {
		r.t.Fatalf("%s: the page shows %v cached, status all of it", browseKey, share)
	}

	r.do(tab, "pinning from the page", chromedp.Click(`#objects button[data-pin="`+browseKey+`"]`),
		waitJS(row+` !== null && `+row+`.querySelector('td.pinned').dataset.pinned === 'true' &&
			`+row+`.querySelector('button[data-unpin]') !== null`))
	r.shot(tab, "objects-pinned")
	if pinned := r.bucketStatus(shownBucket).Pinned; !slices.Contains(pinned, browseKey) {
		r.t.Fatalf("status lists the pins %q", pinned)
	}

	r.do(tab, "evicting from the page", chromedp.Click(`#objects button[data-evict="`+browseKey+`"]`),
		waitJS(row+` !== null && `+row+`.querySelector('td.cached').dataset.value === '0'`))
	r.shot(tab, "objects-evicted")
	if o := r.status("--object", "s3://"+shownBucket+"/"+browseKey).Object; o == nil || o.Held != 0 {
		r.t.Fatalf("after evicting, status: %+v", o)
	}

	r.do(tab, "a download link", chromedp.Click(`#objects button[data-download="`+browseKey+`"]`),
		waitJS(`!!`+row+`.querySelector('button[data-download]').dataset.href`))
	href := eval[string](r, tab, row+`.querySelector('button[data-download]').dataset.href`)
	if got := r.fetch(href); !bytes.Equal(got, body) {
		r.t.Fatalf("the download link yields %d bytes", len(got))
	}

	r.do(tab, "unpinning from the page", chromedp.Click(`#objects button[data-unpin="`+browseKey+`"]`),
		waitJS(row+` !== null && `+row+`.querySelector('td.pinned').dataset.pinned === 'false'`))
	if pinned := r.bucketStatus(shownBucket).Pinned; slices.Contains(pinned, browseKey) {
		r.t.Fatalf("unpinned, status lists the pins %q", pinned)
	}
}

// setField sets the value of the field of id, once it takes it (a select
// offers the buckets once signed in); chromedp.SetValue cannot set "".
func setField(id, value string) chromedp.Action[chromedp.Void] {
	return waitJS(`((s, v) => { s.value = v; return s.value === v; })(document.getElementById('` + id + `'), '` + value + `')`)
}

// bucketStatus is status --json's report of bucket.
func (r *consoleRig) bucketStatus(bucket string) ops.BucketStatus {
	r.t.Helper()
	for _, b := range r.status().Buckets {
		if b.Bucket == bucket {
			return b
		}
	}
	r.t.Fatalf("status reports no bucket %s", bucket)
	return ops.BucketStatus{}
}

// download reads key of the shown bucket through cl.
func (r *consoleRig) download(cl *minio.Client, key string) []byte {
	r.t.Helper()
	obj, err := cl.GetObject(context.Background(), shownBucket, key, minio.GetObjectOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	defer obj.Close()
	b, err := io.ReadAll(obj)
	if err != nil {
		r.t.Fatal(err)
	}
	return b
}

// fetch GETs a link of the page (a path and query on the node) with no
// credentials but the link's own.
func (r *consoleRig) fetch(href string) []byte {
	r.t.Helper()
	resp, err := http.Get(r.base + href)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		r.t.Fatalf("GET %s: %d %v %s", href, resp.StatusCode, err, b)
	}
	return b
}

// browseCluster lists the bucket of key in the page: key's row names
// every member, and its cached share is what they hold as owners (not
// hot copies) together, as status --object reports.
func (r *consoleRig) browseCluster(tab context.Context, bucket, key string, members int) {
	row := `document.querySelector('#objects tr[data-key="` + key + `"]')`
	r.do(tab, "browsing "+bucket,
		setField("browse-bucket", bucket), setField("browse-prefix", ""),
		chromedp.Click(`#browse-form button[type="submit"]`),
		waitJS(row+` !== null && `+row+`.querySelectorAll('td.where div[data-member]').length === `+fmt.Sprint(members)))
	r.shot(tab, "cluster-objects")
	var held, size int64
	for _, n := range r.clusterStatus("--object", "s3://"+bucket+"/"+key).Nodes {
		var ns ops.Status
		if err := json.Unmarshal(n.Status, &ns); err != nil || ns.Object == nil {
			r.t.Fatalf("member %s: %v %s", n.ID, err, n.Status)
		}
		var own int64 // the hot tiers' copies are of chunks other members own
		for tier, n := range ns.Object.ByTier {
			if !(gateway.NamedTier{Name: tier}).Copies() {
				own = max(own, n)
			}
		}
		held, size = held+own, ns.Object.Size
	}
	want := math.Min(1, float64(held)/float64(size))
	if got := eval[float64](r, tab, `+`+row+`.querySelector('td.cached').dataset.value`); math.Abs(got-want) > 1e-9 {
		r.t.Fatalf("%s/%s: the page shows %v cached, status %v", bucket, key, got, want)
	}
}
