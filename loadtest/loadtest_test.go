// Smoke test of the load-test harness in quick mode against MinIO and the
// trivial server (granary itself is measured by `make bench`, not here),
// and unit tests of the pieces that guard against fast wrong answers.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts MinIO and moves a few hundred MB")
	}
	needNginx(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var log bytes.Buffer
	rep, err := run(ctx, options{quick: true}, &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	p := quickPlan()
	// minio, trivial, nginx cold, nginx warm and nginx signed.
	if want := len(p.sizes) * len(p.concs) * 5; len(rep.small) != want {
		t.Fatalf("%d small results, want %d", len(rep.small), want)
	}
	cpu := map[string]time.Duration{} // per target and party, over every set
	for _, r := range rep.small {
		if r.n != p.count || r.opsPerSec() <= 0 || r.p50 <= 0 || r.p99 < r.p50 {
			t.Errorf("small result %+v", r)
		}
		// Every warm nginx answer is a hit (signed ones too), every cold
		// one a miss.
		warm := r.target == "nginx warm" || r.target == nginxSigned
		if warm && (r.cacheHits != int64(r.n) || r.cacheOthers != 0) ||
			r.target == "nginx cold" && (r.cacheHits != 0 || r.cacheOthers != int64(r.n)) {
			t.Errorf("nginx pass %s %s c%d: %d hits, %d others", r.target, r.set, r.conc, r.cacheHits, r.cacheOthers)
		}
		c := r.cpu
		if c.client <= 0 || r.target == "trivial" && c.serverMeasured || r.target == "minio" && c.originOf {
			t.Errorf("CPU of %s %s c%d: %+v", r.target, r.set, r.conc, c)
		}
		cpu[r.target+" server"] += c.server
		cpu[r.target+" origin"] += c.origin
	}
	// MinIO serves its own GETs and nginx's misses, nginx's workers serve
	// nginx's GETs; summed over the sets, each is tens of 10 ms ticks.
	for _, party := range []string{"minio server", "nginx cold origin", "nginx cold server", "nginx warm server", "nginx signed server"} {
		if cpu[party] <= 0 {
			t.Errorf("no CPU time charged to %s: %v", party, cpu)
		}
	}
	if len(rep.large) != 10 {
		t.Fatalf("%d large results, want 10", len(rep.large))
	}
	for _, r := range rep.large {
		if r.bytes != p.largeSize || r.mbPerSec() <= 0 {
			t.Errorf("large result %+v", r)
		}
		if (r.target == "nginx warm" || r.target == nginxSigned) && r.cacheOthers != 0 {
			t.Errorf("%s %s: %d answers not from the cache", r.target, r.mode, r.cacheOthers)
		}
	}
	md := rep.markdown()
	for _, want := range []string{"| 4KiB | 16 | minio |", "| 100KiB | 64 | trivial |", "| 4KiB | 64 | nginx warm |", "| 4KiB | 64 | nginx signed |",
		"| 8 ranges | minio |", "| 8 ranges | nginx cold |", "quick mode",
		"## CPU per GET", "| 4KiB | 16 | trivial | in the client | - | none |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

func TestDatasetObjectsDistinct(t *testing.T) {
	d := newDataset(plan{count: 500, sizes: []int{4 << 10, 100 << 10}, concs: []int{1, 2}, largeSize: 1 << 20, ranges: 2})
	seen := map[[32]byte]string{}
	keys := map[string]bool{}
	for _, o := range d.all() {
		sum := sha256.Sum256(o.data)
		if other, dup := seen[sum]; dup {
			t.Fatalf("%s and %s have the same bytes", o.key, other)
		}
		seen[sum] = o.key
		if keys[o.key] {
			t.Fatalf("key %s twice", o.key)
		}
		keys[o.key] = true
	}
	if len(keys) != 4*500+2 {
		t.Fatalf("%d objects", len(keys))
	}
}

func TestVerifyBody(t *testing.T) {
	want := randomBytes(100_000, 9)
	buf := make([]byte, 4096)
	if n, err := verifyBody(iotest.HalfReader(bytes.NewReader(want)), want, buf, "ok"); err != nil || n != int64(len(want)) {
		t.Fatalf("good body: %d, %v", n, err)
	}
	bad := bytes.Clone(want)
	bad[77_777] ^= 1
	if _, err := verifyBody(bytes.NewReader(bad), want, buf, "flip"); err == nil || !strings.Contains(err.Error(), "wrong bytes") {
		t.Fatalf("flipped bit: %v", err)
	}
	if _, err := verifyBody(bytes.NewReader(want[:99_999]), want, buf, "short"); err == nil {
		t.Fatal("short body accepted")
	}
	if _, err := verifyBody(io.MultiReader(bytes.NewReader(want), strings.NewReader("x")), want, buf, "long"); err == nil {
		t.Fatal("long body accepted")
	}
}

// TestClientAgainstTrivial checks the client's ranged and whole reads and
// that a server answering other bytes is caught.
func TestClientAgainstTrivial(t *testing.T) {
	d := &dataset{bucket: "b", large: []object{{key: "k", data: randomBytes(1<<20, 3)}}}
	triv, err := startTrivial(d)
	if err != nil {
		t.Fatal(err)
	}
	defer triv.close()
	cl := newClient(target{name: "trivial", endpoint: triv.endpoint(), access: "a", secret: "s"}, "b", 4)
	defer cl.close()
	ctx := context.Background()
	for _, parts := range []int{1, 3, 8} {
		if _, err := runLarge(ctx, cl, d.large[0], parts, "trivial"); err != nil {
			t.Fatalf("%d parts: %v", parts, err)
		}
	}
	wrong := object{key: "k", data: randomBytes(1<<20, 4)}
	if _, err := runLarge(ctx, cl, wrong, 8, "trivial"); err == nil {
		t.Fatal("other bytes accepted")
	}
	if _, err := cl.get(ctx, "missing", 0, []byte("x"), true, make([]byte, 10)); err == nil {
		t.Fatal("404 accepted")
	}
}

func TestSignedRequestsCarryAuth(t *testing.T) {
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		w.Write([]byte("hi"))
	}))
	defer srv.Close()
	cl := newClient(target{name: "t", endpoint: srv.URL, access: "AKID", secret: "s"}, "b", 1)
	defer cl.close()
	if _, err := cl.get(context.Background(), "k", 0, []byte("hi"), true, make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKID/") {
		t.Fatalf("Authorization %q", auth)
	}
	anon := newClient(target{name: "nginx", endpoint: srv.URL, anonymous: true}, "b", 1)
	defer anon.close()
	if _, err := anon.get(context.Background(), "k", 0, []byte("hi"), true, make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		t.Fatalf("anonymous target sent Authorization %q", auth)
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	if percentile(d, 0.5) != 50 || percentile(d, 0.99) != 99 || percentile(d, 1) != 100 || percentile(nil, 0.5) != 0 {
		t.Fatalf("p50 %d p99 %d", percentile(d, 0.5), percentile(d, 0.99))
	}
}

func TestParseRange(t *testing.T) {
	cases := []struct {
		in         string
		start, end int64
		ok         bool
	}{
		{"bytes=0-9", 0, 9, true},
		{"bytes=5-100", 5, 49, true},
		{"bytes=50-60", 0, 0, false},
		{"bytes=9-3", 0, 0, false},
		{"bytes=-5", 0, 0, false},
		{"bytes=3-", 0, 0, false},
	}
	for _, c := range cases {
		s, e, ok := parseRange(c.in, 50)
		if ok != c.ok || (ok && (s != c.start || e != c.end)) {
			t.Errorf("parseRange(%q) = %d %d %v", c.in, s, e, ok)
		}
	}
}
