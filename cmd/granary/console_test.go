// The web console in a real browser: headless Chromium (Debian's
// chromium, driven with chromedp) against `granary serve` in front of a
// real MinIO. The page's figures are checked against `granary status
// --json`, a warm-up is started from its form and watched to the end, a
// key scoped to one bucket sees nothing of the others, and a key without
// admin rights and a wrong secret are told so. A screenshot of each page is kept: under
// $GRANARY_CONSOLE_ARTIFACTS if set, else in the test's temporary
// directory (removed after the test). A second test does the same with a
// cluster: members, health, ring shares and where an object's chunks are.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/api"
	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/ops"
)

// consoleArtifactsEnv names the directory the screenshots go to.
const consoleArtifactsEnv = "GRANARY_CONSOLE_ARTIFACTS"

// browserWait bounds every wait for the page (a busy machine is slow to
// render, never this slow).
const browserWait = 90 * time.Second

// consoleRig is a node, its admin environment and a browser.
type consoleRig struct {
	t         *testing.T
	base      string // http://HOST:PORT
	env       map[string]string
	browser   context.Context
	artifacts string
}

// newConsoleRig starts a browser for the console of the node at base,
// whose admin's environment is env. The screenshots go to a directory of
// the test's name under $GRANARY_CONSOLE_ARTIFACTS, else to a temporary one.
func newConsoleRig(t *testing.T, base string, env map[string]string) *consoleRig {
	r := &consoleRig{t: t, base: base, env: env, artifacts: t.TempDir()}
	if dir := os.Getenv(consoleArtifactsEnv); dir != "" {
		r.artifacts = filepath.Join(dir, t.Name())
		if err := os.MkdirAll(r.artifacts, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r.browser = startBrowser(t)
	return r
}

// chromiumPath is Debian's Chromium binary (the launcher script in
// /usr/bin only adds flags the tests set themselves).
func chromiumPath(t *testing.T) string {
	for _, p := range []string{"/usr/lib/chromium/chromium", "/usr/bin/chromium"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed: run `make deps` (scripts/deps.sh installs Debian's chromium)")
	}
	return p
}

// startBrowser starts headless Chromium for the test's length.
func startBrowser(t *testing.T) context.Context {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU, chromedp.WindowSize(1280, 1600),
		chromedp.Flag("disable-dev-shm-usage", true))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil { // starts the browser: no deadline on this first call
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// tab opens a new tab: a fresh page, with no state of the others'.
func (r *consoleRig) tab() context.Context {
	ctx, cancel := chromedp.NewContext(r.browser)
	r.t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		r.t.Fatalf("opening a tab: %v", err)
	}
	return ctx
}

// do runs steps in tab within browserWait.
func (r *consoleRig) do(tab context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(tab, browserWait)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		r.shot(tab, "failed")
		r.t.Fatalf("%s: %v", what, err)
	}
}

// waitJS waits (polling, bounded) until expr is true in the page.
func waitJS(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Poll[bool](expr, chromedp.WithPollingInterval(100*time.Millisecond),
			chromedp.WithPollingTimeout(browserWait))(ctx, tg)
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", expr, err)
		}
		return nil
	})
}

// eval evaluates expr in the page and decodes its value into a T.
func eval[T any](r *consoleRig, tab context.Context, expr string) T {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(tab, browserWait)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		r.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// shot keeps a screenshot of the tab's whole page as NAME.png.
func (r *consoleRig) shot(tab context.Context, name string) {
	ctx, cancel := context.WithTimeout(tab, browserWait)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		r.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	path := filepath.Join(r.artifacts, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		r.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	r.t.Logf("screenshot: %s", path)
}

// signIn opens the console in tab and submits the sign-in form.
func (r *consoleRig) signIn(tab context.Context, key, secret, shot string) {
	r.t.Helper()
	r.do(tab, "opening the console", chromedp.Navigate(r.base+"/_granary/console/"),
		waitJS(`document.body.dataset.ready === 'true'`), chromedp.WaitVisible("#signin"),
		chromedp.SendKeys("#access-key", key), chromedp.SendKeys("#secret-key", secret))
	if shot != "" {
		r.shot(tab, shot)
	}
	r.do(tab, "signing in", chromedp.Click(`#signin button[type="submit"]`))
}

// granary runs a granary command as the node's admin and returns its output.
func (r *consoleRig) granary(args ...string) string {
	r.t.Helper()
	var out bytes.Buffer
	if code := execute(context.Background(), args, &out, &out, envMap(r.env)); code != exitOK {
		r.t.Fatalf("granary %s: exit %d\n%s", strings.Join(args, " "), code, out.String())
	}
	return out.String()
}

// status is `granary status --json` of the node.
func (r *consoleRig) status(args ...string) ops.Status {
	r.t.Helper()
	var st ops.Status
	out := r.granary(append([]string{"status", "--json", "--endpoint", r.base}, args...)...)
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		r.t.Fatalf("status --json: %v\n%s", err, out)
	}
	return st
}

// Names that must never reach the scoped key's page.
const (
	shownBucket  = "console-data"
	hiddenBucket = "console-hidden-q7x"
	hiddenKey    = "hidden-object-z9"
)

func TestConsoleInABrowser(t *testing.T) {
	mio := miniotest.StartT(t)
	dir := t.TempDir()
	env := map[string]string{
		"GRANARY_ACCESS_KEY": "console-admin", "GRANARY_SECRET_KEY": "console-admin-secret",
		"GRANARY_ORIGIN_ACCESS_KEY": mio.AccessKey, "GRANARY_ORIGIN_SECRET_KEY": mio.SecretKey,
		"GRANARY_DATA_DIR": dir,
	}
	s := startServe(t, env, "--origin", "s3://"+mio.Endpoint+"?secure=false", "--ram", "64MiB", "--disk", "128MiB")
	fillBuckets(t, clientAs(t, s.addr, "console-admin", "console-admin-secret"))
	r := newConsoleRig(t, "http://"+s.addr, env)
	r.granary("pin", "--endpoint", r.base, "s3://"+shownBucket+"/train/")

	admin := r.tab()
	r.signIn(admin, "console-admin", "console-admin-secret", "signin")
	r.do(admin, "the console loads", waitJS(`document.getElementById('app').dataset.state === 'ready'`))
	r.checkTiers(admin)
	r.warmFromTheForm(admin)
	r.checkBuckets(admin)
	r.checkChartsAndMembers(admin)
	r.checkNotFoundIsNoFailure(admin, clientAs(t, s.addr, "console-admin", "console-admin-secret"))
	r.shot(admin, "overview")
	r.search(admin)
	r.browse(admin, clientAs(t, s.addr, "console-admin", "console-admin-secret"))

	r.granary("warm", "--endpoint", r.base, "s3://"+hiddenBucket+"/")
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("scoped-ops-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.granary("user", "add", "scoped-ops", "--data-dir", dir, "--secret-file", secret, "--allow", "all:"+shownBucket)
	r.granary("user", "add", "reader-only", "--data-dir", dir, "--secret-file", secret, "--allow", "read,list:"+shownBucket)
	r.checkScoped()
	r.checkRefused("reader-only", "scoped-ops-secret", "This key may not see anything on this node", "no-admin")
	r.checkRefused("console-admin", "not-the-admin-secret", "Wrong access key or secret key", "wrong-secret")
	r.checkOriginDown(admin, mio, clientAs(t, s.addr, "console-admin", "console-admin-secret"))
}

// fillBuckets writes four objects to the shown bucket and one to the
// hidden one, and reads some of them (a miss, then a hit).
func fillBuckets(t *testing.T, cl *minio.Client) {
	ctx := context.Background()
	body := bytes.Repeat([]byte("granary console "), 16<<10) // 256 KiB
	for _, b := range []string{shownBucket, hiddenBucket} {
		if err := cl.MakeBucket(ctx, b, minio.MakeBucketOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	put := func(b, k string) {
		if _, err := cl.PutObject(ctx, b, k, bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		put(shownBucket, fmt.Sprintf("train/obj-%d", i))
	}
	put(hiddenBucket, hiddenKey)
	for _, bk := range [][2]string{{shownBucket, "train/obj-0"}, {shownBucket, "train/obj-0"}, {hiddenBucket, hiddenKey}} {
		obj, err := cl.GetObject(ctx, bk[0], bk[1], minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, obj)
		obj.Close()
		if err != nil || n != int64(len(body)) {
			t.Fatalf("reading %s/%s: %d bytes, %v", bk[0], bk[1], n, err)
		}
	}
}

// pageTier is a tier's row as the page shows it.
type pageTier struct {
	Name                      string
	Used, Capacity, Evictions int64
	Chunks, Declined          int64
	UsedText                  string
}

const tiersJS = `Array.from(document.querySelectorAll('#tiers tbody tr'), tr => ({
	Name: tr.dataset.tier, Used: +tr.cells[1].dataset.value, UsedText: tr.cells[1].textContent,
	Capacity: +tr.cells[2].dataset.value, Chunks: +tr.cells[4].dataset.value,
	Evictions: +tr.cells[5].dataset.value, Declined: +tr.cells[6].dataset.value}))`

// checkTiers waits until the page's tiers are what status reports (the
// page refreshes every few seconds; the disk filler may still be at work).
func (r *consoleRig) checkTiers(tab context.Context) {
	eventually(r.t, "the page's tiers match status --json", func() error {
		st := r.status()
		page := eval[[]pageTier](r, tab, tiersJS)
		if len(page) != len(st.Tiers) || len(page) == 0 {
			return fmt.Errorf("page has %d tiers, status %d", len(page), len(st.Tiers))
		}
		for i, want := range st.Tiers {
			got := page[i]
			if got.Name != want.Name || got.Used != want.UsedBytes || got.Capacity != want.CapacityBytes ||
				got.Evictions != want.Evictions || got.Chunks != want.Chunks || got.Declined != want.Declined || got.UsedText == "" {
				return fmt.Errorf("tier %d: page %+v, status %+v", i, got, want)
			}
		}
		return nil
	})
}

// warmFromTheForm starts a warm-up of the shown bucket from the page's
// form and watches its row until it is done; status agrees.
func (r *consoleRig) warmFromTheForm(tab context.Context) {
	r.do(tab, "starting a warm-up from the form",
		chromedp.SetValue("#warm-bucket", shownBucket), chromedp.SetValue("#warm-prefix", "train/"),
		chromedp.Click(`#warm-form button[type="submit"]`),
		waitJS(`document.querySelector('#warmups tbody tr[data-state]') !== null`))
	r.shot(tab, "warm-up-started")
	r.do(tab, "the warm-up completes", waitJS(`document.querySelector('#warmups tbody tr[data-state="done"]') !== null`))
	r.shot(tab, "warm-up-done")
	type job struct {
		ID            string
		Fetched, Done int64
	}
	got := eval[job](r, tab, `(() => { const tr = document.querySelector('#warmups tbody tr[data-state="done"]');
		return {ID: tr.dataset.job, Fetched: +tr.cells[4].dataset.value, Done: +tr.cells[5].dataset.value}; })()`)
	for _, w := range r.status().Warm {
		if w.ID == got.ID {
			if w.State != ops.WarmDone || w.Spec.Bucket != shownBucket || w.Spec.Prefix != "train/" ||
				w.Fetched+w.Cached != 4 || w.Fetched != got.Fetched || w.FetchedBytes != got.Done {
				r.t.Fatalf("warm-up %s: page %+v, status %+v", got.ID, got, w)
			}
			return
		}
	}
	r.t.Fatalf("status has no warm-up %s", got.ID)
}

// pageBucket is a bucket's row as the page shows it.
type pageBucket struct {
	Bucket                string
	Objects, Bytes, Quota int64
	RAM, Disk             int64
	Cached, HitRate       float64
	ObjectsText, Pinned   string
}

const bucketsJS = `Array.from(document.querySelectorAll('#buckets tbody tr'), tr => ({
	Bucket: tr.dataset.bucket, Objects: +tr.cells[1].dataset.value, ObjectsText: tr.cells[1].textContent,
	Bytes: +tr.cells[2].dataset.value, Cached: +tr.cells[3].dataset.value,
	RAM: +tr.cells[4].dataset.value, Disk: +tr.cells[5].dataset.value, Pinned: tr.cells[6].textContent,
	Quota: +tr.cells[7].dataset.value, HitRate: +tr.cells[8].dataset.value}))`

// checkBuckets waits until the page's buckets are what status reports.
func (r *consoleRig) checkBuckets(tab context.Context) {
	eventually(r.t, "the page's buckets match status --json", func() error {
		st := r.status()
		page := eval[[]pageBucket](r, tab, bucketsJS)
		if len(page) != len(st.Buckets) {
			return fmt.Errorf("page has %d buckets, status %d", len(page), len(st.Buckets))
		}
		for i, want := range st.Buckets {
			got := page[i]
			if got.Bucket != want.Bucket || got.Objects != want.Objects || got.Bytes != want.Bytes ||
				got.Cached != want.CachedPercent || got.HitRate != want.HitRate || got.Quota != want.Quota ||
				got.RAM != want.TierBytes["ram"] || got.Disk != want.TierBytes["disk"] ||
				got.ObjectsText != fmt.Sprint(want.Objects) {
				return fmt.Errorf("bucket %d: page %+v, status %+v", i, got, want)
			}
			if want.Bucket == shownBucket && (want.Objects != 4 || got.Pinned != "train/") {
				return fmt.Errorf("%s: %d objects, pinned %q on the page", shownBucket, want.Objects, got.Pinned)
			}
		}
		return nil
	})
}

// checkChartsAndMembers waits for the charts to draw the reads, and checks
// the one member (no cluster) is shown healthy with the whole ring.
func (r *consoleRig) checkChartsAndMembers(tab context.Context) {
	r.do(tab, "the charts draw the traffic",
		waitJS(`+document.getElementById('chart-hitrate').dataset.points > 0 &&
			+document.getElementById('chart-throughput').dataset.points > 0 &&
			document.querySelector('#chart-throughput polyline') !== null &&
			document.getElementById('hitrate-now').textContent.endsWith('%')`))
	type member struct {
		Rows   int
		Health string
		Share  float64
	}
	r.do(tab, "the charts' range", setField("chart-range", "5"),
		waitJS(`(document.getElementById('chart-range').dispatchEvent(new Event('change')), true)`),
		waitJS(`document.getElementById('chart-hitrate').dataset.span === '300' &&
			document.getElementById('charts-title').textContent === 'Last 5 minutes'`))
	m := eval[member](r, tab, `({Rows: document.querySelectorAll('#members tbody tr').length,
		Health: document.querySelector('#members tbody tr').cells[2].textContent,
		Share: +document.querySelector('#members tbody tr').cells[3].dataset.value})`)
	if m.Rows != 1 || m.Health != "healthy" || m.Share != 1 {
		r.t.Fatalf("members: %+v", m)
	}
	origin := eval[string](r, tab, `document.getElementById('origin').textContent`)
	if !strings.Contains(origin, "Last 5 minutes") || !strings.Contains(origin, " sent, ") ||
		!strings.Contains(origin, "Circuit breaker") || strings.Contains(origin, "timeoutSeconds") || rawTime.MatchString(origin) {
		r.t.Fatalf("origin panel: %q", origin)
	}
	if banner := eval[bool](r, tab, `document.getElementById('origin-banner').hidden`); !banner {
		r.t.Fatal("the origin-down banner shows while the origin is up")
	}
	r.checkOriginState(tab)
}

// checkOriginState compares the origin's state and breaker on the page
// with status --json (the page shows what the status said when it last
// refreshed, so it is read until the two agree or the wait ends).
func (r *consoleRig) checkOriginState(tab context.Context) {
	st := r.status()
	if st.Origin == nil || st.Origin.State == "" {
		r.t.Fatalf("status has no origin state: %+v", st.Origin)
	}
	want := st.Origin.State + "/" + st.Origin.Breaker
	r.do(tab, "the origin's state is "+want,
		waitJS(`(() => { const v = k => { const tr = document.querySelector('#origin tr[data-origin="' + k + '"]');
			return tr ? tr.cells[1].dataset.value : ''; };
			return v('state') + '/' + v('breaker') === '`+want+`'; })()`))
}

// search looks an object up from the page and compares with status.
func (r *consoleRig) search(tab context.Context) {
	r.do(tab, "searching an object",
		chromedp.SetValue("#search-bucket", shownBucket), chromedp.SetValue("#search-key", "train/obj-1"),
		chromedp.Click(`#search-form button[type="submit"]`),
		waitJS(`document.querySelector('#search tbody tr td[data-value]') !== null`))
	r.shot(tab, "search")
	type held struct{ Held, Size int64 }
	got := eval[held](r, tab, `(() => { const tr = document.querySelector('#search tbody tr');
		return {Held: +tr.cells[1].dataset.value, Size: +tr.cells[2].dataset.value}; })()`)
	st := r.status("--object", "s3://"+shownBucket+"/train/obj-1")
	if st.Object == nil || got.Held != st.Object.Held || got.Size != st.Object.Size || got.Held != got.Size {
		r.t.Fatalf("search: page %+v, status %+v", got, st.Object)
	}
}

// checkScoped signs in, in a new tab, with a key granted one bucket: the
// page shows that bucket and nothing of the other's, not even its name.
func (r *consoleRig) checkScoped() {
	tab := r.tab()
	eventually(r.t, "the scoped key is accepted", func() error {
		r.signIn(tab, "scoped-ops", "scoped-ops-secret", "")
		ctx, cancel := context.WithTimeout(tab, browserWait)
		defer cancel()
		state, err := chromedp.Run(ctx, chromedp.Poll[string](`document.getElementById('app').dataset.state === 'ready' ? 'ready' :
			document.getElementById('signin-error').textContent`, chromedp.WithPollingInterval(100*time.Millisecond)))
		if err != nil || state != "ready" {
			return fmt.Errorf("sign-in: %q %v", state, err)
		}
		return nil
	})
	r.do(tab, "the scoped page shows its bucket",
		waitJS(`document.querySelector('#buckets tbody tr[data-bucket="`+shownBucket+`"]') !== null &&
			document.querySelector('#warmups tbody tr') !== null &&
			+document.getElementById('chart-hitrate').dataset.points > 0`))
	r.shot(tab, "scoped")
	html := eval[string](r, tab, `document.documentElement.outerHTML`)
	for _, secret := range []string{hiddenBucket, hiddenKey} {
		if strings.Contains(html, secret) {
			r.t.Errorf("the scoped key's page shows %q", secret)
		}
	}
	rows := eval[[]string](r, tab, `Array.from(document.querySelectorAll('#buckets tbody tr'), tr => tr.dataset.bucket)`)
	if len(rows) != 1 || rows[0] != shownBucket {
		r.t.Errorf("the scoped key's buckets: %v", rows)
	}
	who := eval[string](r, tab, `document.getElementById('whoami').textContent`)
	if !strings.Contains(who, "scoped-ops") {
		r.t.Errorf("signed in as %q", who)
	}
}

// checkRefused signs in, in a new tab, with a key and secret the console
// must refuse: the sign-in form tells why, and no data shows.
func (r *consoleRig) checkRefused(key, secret, why, shot string) {
	tab := r.tab()
	eventually(r.t, "the sign-in of "+key+" is refused with "+why, func() error {
		r.signIn(tab, key, secret, "")
		r.do(tab, "the refusal is told", waitJS(`document.getElementById('signin-error').textContent !== ''`))
		if msg := eval[string](r, tab, `document.getElementById('signin-error').textContent`); !strings.Contains(msg, why) {
			return fmt.Errorf("told %q", msg)
		}
		return nil
	})
	r.shot(tab, shot)
	type view struct {
		AppHidden bool
		Rows      int
	}
	v := eval[view](r, tab, `({AppHidden: document.getElementById('app').hidden,
		Rows: document.querySelectorAll('#app tbody tr').length})`)
	if !v.AppHidden || v.Rows != 0 {
		r.t.Fatalf("after a refused sign-in of %s: %+v", key, v)
	}
}

// clusterStatus is `granary status --json` of a cluster member.
func (r *consoleRig) clusterStatus(args ...string) api.ClusterStatus {
	r.t.Helper()
	var st api.ClusterStatus
	out := r.granary(append([]string{"status", "--json", "--endpoint", r.base}, args...)...)
	if err := json.Unmarshal([]byte(out), &st); err != nil || len(st.Nodes) == 0 {
		r.t.Fatalf("status --json of a cluster: %v\n%s", err, out)
	}
	return st
}

// pageMember is a member's row as the page shows it.
type pageMember struct {
	ID, Health string
	Share      float64
}

const membersJS = `Array.from(document.querySelectorAll('#members tbody tr'), tr => ({
	ID: tr.dataset.member, Health: tr.cells[2].textContent, Share: +tr.cells[3].dataset.value}))`

// checkMembers waits until the page's members are what status reports.
func (r *consoleRig) checkMembers(tab context.Context, healthy int) {
	r.t.Helper()
	eventually(r.t, "the page's members match status --json", func() error {
		st := r.clusterStatus()
		page := eval[[]pageMember](r, tab, membersJS)
		if len(page) != len(st.Nodes) {
			return fmt.Errorf("page has %d members, status %d", len(page), len(st.Nodes))
		}
		n, sum := 0, 0.0
		for i, want := range st.Nodes {
			got := page[i]
			if got.ID != want.ID || got.Share != want.RingShare || (got.Health == "healthy") != want.Healthy {
				return fmt.Errorf("member %d: page %+v, status %+v", i, got, want)
			}
			if want.Healthy {
				n++
			}
			sum += want.RingShare
		}
		if n != healthy || math.Abs(sum-1) > 1e-9 {
			return fmt.Errorf("%d healthy members (want %d), shares add up to %v", n, healthy, sum)
		}
		return nil
	})
}

func TestConsoleInABrowserCluster(t *testing.T) {
	mio := miniotest.StartT(t)
	rig := startCluster(t, mio, "s3://"+mio.Endpoint+"?secure=false", 3, "--chunk-size", "256KiB")
	ctx := context.Background()
	direct := directClient(t, mio)
	if err := direct.MakeBucket(ctx, "models", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	obj := randomBytes(17, 3<<20) // 12 chunks over 3 owners
	if _, err := direct.PutObject(ctx, "models", "model.bin", bytes.NewReader(obj), int64(len(obj)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(getAll(t, nodeClient(t, rig.env, rig.addrs[0]), "models", "model.bin"), obj) {
		t.Fatal("read wrong")
	}
	r := newConsoleRig(t, "http://"+rig.addrs[0], rig.env)
	tab := r.tab()
	r.signIn(tab, rig.env["GRANARY_ACCESS_KEY"], rig.env["GRANARY_SECRET_KEY"], "")
	r.do(tab, "the console loads", waitJS(`document.getElementById('app').dataset.state === 'ready' &&
		document.querySelectorAll('#members tbody tr').length === 3`))
	r.checkMembers(tab, 3)

	// Where the object's chunks are: every member's share, as status says.
	r.do(tab, "searching the object",
		chromedp.SetValue("#search-bucket", "models"), chromedp.SetValue("#search-key", "model.bin"),
		chromedp.Click(`#search-form button[type="submit"]`),
		waitJS(`document.querySelectorAll('#search tbody tr td[data-value]').length === 6`))
	r.shot(tab, "cluster")
	type held struct {
		ID   string
		Held int64
	}
	page := eval[[]held](r, tab, `Array.from(document.querySelectorAll('#search tbody tr'), tr => ({
		ID: tr.dataset.member, Held: +tr.cells[1].dataset.value}))`)
	st := r.clusterStatus("--object", "s3://models/model.bin")
	if len(page) != len(st.Nodes) {
		t.Fatalf("search shows %d members, status %d", len(page), len(st.Nodes))
	}
	holders := 0
	for i, n := range st.Nodes {
		var ns ops.Status
		if err := json.Unmarshal(n.Status, &ns); err != nil || ns.Object == nil {
			t.Fatalf("member %s: %v %s", n.ID, err, n.Status)
		}
		if page[i].ID != n.ID || page[i].Held != ns.Object.Held {
			t.Fatalf("member %d: page %+v, status holds %d", i, page[i], ns.Object.Held)
		}
		if ns.Object.Held > 0 {
			holders++
		}
	}
	if holders < 2 {
		t.Fatalf("the object's chunks are on %d members; want them spread", holders)
	}
	r.browseCluster(tab, "models", "model.bin", 3)

	// A warm-up started on another member shows here, as that member's.
	r.granary("warm", "--endpoint", "http://"+rig.addrs[1], "s3://models/")
	r.do(tab, "the other member's warm-up shows",
		waitJS(`Array.from(document.querySelectorAll('#warmups tbody tr[data-state="done"]')).some(tr =>
			tr.dataset.member !== '' && tr.cells[0].textContent.endsWith(' on ' + tr.dataset.member) && tr.querySelector('button[data-cancel]') === null)`))

	// A member that stops is shown unreachable, with no share of the ring.
	rig.nodes[2].stop(t)
	rig.nodes[2] = nil
	r.checkMembers(tab, 2)
	r.do(tab, "the stopped member shows", waitJS(`Array.from(document.querySelectorAll('#members tbody tr td.unhealthy')).length === 1`))
	r.shot(tab, "cluster-member-down")
}
