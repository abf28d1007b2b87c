// Listing: v1 and v2 paging over 1,500 keys with and without a delimiter
// (every entry exactly once, in order), and the query validation.
package api

import (
	"context"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/minio/minio-go/v7"
)

const (
	listDirs   = 30
	listNested = 1450
	listTop    = 50
)

// listKeys is the key set of the listing tests: nested keys under listDirs
// prefixes (some with characters encoding-type=url must carry), and keys
// at the top level.
func listKeys() []string {
	var keys []string
	for i := range listNested {
		switch {
		case i%97 == 0:
			keys = append(keys, fmt.Sprintf("d%02d/space key+plus %04d", i%listDirs, i))
		default:
			keys = append(keys, fmt.Sprintf("d%02d/f%04d", i%listDirs, i))
		}
	}
	for i := range listTop {
		keys = append(keys, fmt.Sprintf("top%03d", i))
	}
	slices.Sort(keys)
	return keys
}

func TestList(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t, b)
			bucket := e.makeBucket(t, "list")
			keys := listKeys()
			e.putMany(t, bucket, keys)
			t.Run("Recursive", func(t *testing.T) { testListRecursive(t, e, bucket, keys) })
			t.Run("Delimiter", func(t *testing.T) { testListDelimiter(t, e, bucket, keys) })
			t.Run("Raw", func(t *testing.T) { testListRaw(t, e, bucket) })
		})
	}
}

// putMany stores keys (each holding its own name) with a few workers.
func (e *env) putMany(t *testing.T, bucket string, keys []string) {
	t.Helper()
	work := make(chan string)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range work {
				_, err := e.client.PutObject(context.Background(), bucket, k, strings.NewReader(k), int64(len(k)), minio.PutObjectOptions{})
				if err != nil {
					t.Errorf("put %s: %v", k, err)
				}
			}
		}()
	}
	for _, k := range keys {
		work <- k
	}
	close(work)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

// collect lists through minio-go and returns keys (or prefixes) in order.
func collect(t *testing.T, e *env, bucket string, opts minio.ListObjectsOptions) []string {
	t.Helper()
	var out []string
	for obj := range e.client.ListObjects(context.Background(), bucket, opts) {
		if obj.Err != nil {
			t.Fatalf("list %+v: %v", opts, obj.Err)
		}
		out = append(out, obj.Key)
	}
	return out
}

func testListRecursive(t *testing.T, e *env, bucket string, keys []string) {
	for _, v1 := range []bool{false, true} {
		for _, maxKeys := range []int{0, 1000, 137} {
			got := collect(t, e, bucket, minio.ListObjectsOptions{Recursive: true, UseV1: v1, MaxKeys: maxKeys})
			if !slices.Equal(got, keys) {
				t.Errorf("v1=%v max-keys=%d: %d keys listed, want %d (first diff %s)",
					v1, maxKeys, len(got), len(keys), firstDiff(got, keys))
			}
		}
		prefix := "d07/"
		var want []string
		for _, k := range keys {
			if strings.HasPrefix(k, prefix) {
				want = append(want, k)
			}
		}
		got := collect(t, e, bucket, minio.ListObjectsOptions{Recursive: true, UseV1: v1, Prefix: prefix, MaxKeys: 10})
		if !slices.Equal(got, want) {
			t.Errorf("v1=%v prefix %s: %v, want %v", v1, prefix, got, want)
		}
	}
	// StartAfter (v2) resumes strictly after the key.
	got := collect(t, e, bucket, minio.ListObjectsOptions{Recursive: true, StartAfter: keys[700], MaxKeys: 99})
	if !slices.Equal(got, keys[701:]) {
		t.Errorf("start-after: %d keys, want %d", len(got), len(keys)-701)
	}
}

func testListDelimiter(t *testing.T, e *env, bucket string, keys []string) {
	var want []string
	for i := range listDirs {
		want = append(want, fmt.Sprintf("d%02d/", i))
	}
	for i := range listTop {
		want = append(want, fmt.Sprintf("top%03d", i))
	}
	slices.Sort(want)
	for _, v1 := range []bool{false, true} {
		for _, maxKeys := range []int{0, 7, 1} {
			// minio-go yields a page's keys before its prefixes: compare
			// sorted, which still catches any entry missing or repeated.
			got := collect(t, e, bucket, minio.ListObjectsOptions{UseV1: v1, MaxKeys: maxKeys})
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("delimiter v1=%v max-keys=%d: %d entries, want %d (first diff %s)",
					v1, maxKeys, len(got), len(want), firstDiff(got, want))
			}
		}
	}
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("at %d: %q vs %q", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("lengths %d vs %d", len(a), len(b))
}

// listResult is what the raw tests read of either listing version.
type listResult struct {
	MaxKeys               int    `xml:"MaxKeys"`
	IsTruncated           bool   `xml:"IsTruncated"`
	NextMarker            string `xml:"NextMarker"`
	NextContinuationToken string `xml:"NextContinuationToken"`
	ContinuationToken     string `xml:"ContinuationToken"`
	KeyCount              int    `xml:"KeyCount"`
	EncodingType          string `xml:"EncodingType"`
	Contents              []struct {
		Key  string `xml:"Key"`
		ETag string `xml:"ETag"`
	} `xml:"Contents"`
	CommonPrefixes []struct {
		Prefix string `xml:"Prefix"`
	} `xml:"CommonPrefixes"`
}

func (e *env) listRaw(t *testing.T, bucket, query string) (*http.Response, []byte, listResult) {
	t.Helper()
	resp, body := e.do(t, rawRequest{method: http.MethodGet, path: "/" + bucket, query: query})
	var res listResult
	if resp.StatusCode == http.StatusOK {
		if err := xml.Unmarshal(body, &res); err != nil {
			t.Fatalf("list %s: %v in %q", query, err, body)
		}
	}
	return resp, body, res
}

func testListRaw(t *testing.T, e *env, bucket string) {
	for _, q := range []string{"max-keys=-1", "max-keys=abc", "list-type=2&max-keys=-5",
		"list-type=2&continuation-token=garbage!",
		"encoding-type=bogus", "list-type=3", "prefix=a%00b", "list-type=2&start-after=%FF", "marker=%00"} {
		resp, body, _ := e.listRaw(t, bucket, q)
		expectError(t, resp, body, http.StatusBadRequest, "InvalidArgument")
	}
	// An empty continuation token is no token, as S3 takes it, and it is
	// echoed, empty (s3-tests' test_bucket_listv2_continuationtoken_empty);
	// a listing given none names none.
	_, body, res := e.listRaw(t, bucket, "list-type=2&continuation-token=&max-keys=3")
	if len(res.Contents) != 3 || res.KeyCount != 3 || res.ContinuationToken != "" {
		t.Errorf("empty continuation-token: %d keys, KeyCount %d, token %q", len(res.Contents), res.KeyCount, res.ContinuationToken)
	}
	if !strings.Contains(string(body), "<ContinuationToken></ContinuationToken>") {
		t.Errorf("empty continuation-token not echoed: %.300s", body)
	}
	if _, body, _ = e.listRaw(t, bucket, "list-type=2&max-keys=3"); strings.Contains(string(body), "<ContinuationToken>") {
		t.Errorf("a listing without continuation-token names one: %.300s", body)
	}
	_, _, res = e.listRaw(t, bucket, "list-type=2&max-keys=5000")
	if res.MaxKeys != 1000 || len(res.Contents) != 1000 || !res.IsTruncated || res.KeyCount != 1000 {
		t.Errorf("max-keys=5000: MaxKeys %d, %d keys, truncated %v, KeyCount %d", res.MaxKeys, len(res.Contents), res.IsTruncated, res.KeyCount)
	}
	_, _, res = e.listRaw(t, bucket, "list-type=2&max-keys=0")
	if len(res.Contents) != 0 || res.IsTruncated {
		t.Errorf("max-keys=0: %d keys, truncated %v", len(res.Contents), res.IsTruncated)
	}
	// v1 with a delimiter sends NextMarker; paging on it visits each entry once.
	seen := map[string]int{}
	marker := ""
	for pages := 0; ; pages++ {
		_, _, res = e.listRaw(t, bucket, "delimiter=%2F&max-keys=9&marker="+url.QueryEscape(marker))
		for _, c := range res.Contents {
			seen[c.Key]++
		}
		for _, p := range res.CommonPrefixes {
			seen[p.Prefix]++
		}
		if !res.IsTruncated {
			break
		}
		if res.NextMarker == "" || pages > 100 {
			t.Fatalf("truncated v1 page without NextMarker (page %d)", pages)
		}
		marker = res.NextMarker
	}
	if len(seen) != listDirs+listTop {
		t.Errorf("v1 delimiter paging saw %d entries, want %d", len(seen), listDirs+listTop)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("entry %q listed %d times", k, n)
		}
	}
	// encoding-type=url encodes names; the client decodes them.
	_, _, res = e.listRaw(t, bucket, "list-type=2&prefix=d00%2Fspace&encoding-type=url")
	if len(res.Contents) == 0 || res.EncodingType != "url" {
		t.Fatalf("encoded listing: %+v", res)
	}
	for _, c := range res.Contents {
		if strings.ContainsAny(c.Key, " +") {
			t.Errorf("key %q not url-encoded", c.Key)
		}
		if dec, err := url.QueryUnescape(c.Key); err != nil || !strings.HasPrefix(dec, "d00/space key+plus ") {
			t.Errorf("key %q decodes to %q, %v", c.Key, dec, err)
		}
		if !strings.HasPrefix(c.ETag, `"`) {
			t.Errorf("ETag %q not quoted", c.ETag)
		}
	}
	resp, body, _ := e.listRaw(t, uniqueBucket("nolist"), "list-type=2")
	expectError(t, resp, body, http.StatusNotFound, "NoSuchBucket")
}
