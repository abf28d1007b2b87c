// The mixed load the network-fault tests run throughout: reads of a
// seeded data set and of what the load wrote, write-through and
// write-back writes, and LIST, from several workers through the nodes
// that are up. It judges as it goes (wrong bytes, a LIST missing seeded
// keys, a request through a live node that outlasts netRequestBound) and
// keeps every acknowledged write for the final check.
package main

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

// Load's buckets: the seeded data set (read only), and the two written.
const (
	netDataBucket = "data"
	netWTBucket   = "wthrough" // write-through
	netWBBucket   = "wback"    // write-back
	// netFixedBucket (freshness immutable) is outside the load.
	netFixedBucket = "fixed"
)

// netStats are one phase's judged requests by kind.
type netStats struct {
	ops, failed map[string]int
	slowest     time.Duration
	errs        []string // the first few failures
}

// netWrite is an acknowledged write's checksums.
type netWrite struct {
	sha [32]byte
	md5 string // hex: the ETag of a single PUT
}

// netLoad is the running load.
type netLoad struct {
	c      *netCluster
	seeded map[string][32]byte // data-bucket key -> SHA-256
	keys   []string            // seeded keys

	mu         sync.Mutex
	phase      string
	order      []string
	stats      map[string]*netStats
	acked      map[string]netWrite // "bucket/key" of acknowledged writes
	ackedKeys  []string
	violations []string

	judged atomic.Int64 // judged requests, all phases
	seq    atomic.Int64 // write sequence: unique keys
	stop   chan struct{}
	wg     sync.WaitGroup
}

// seedNet puts n objects into the data bucket at the origin and returns
// their checksums.
func seedNet(t *testing.T, c *netCluster, n int) map[string][32]byte {
	t.Helper()
	ctx := context.Background()
	for _, b := range []string{netDataBucket, netWTBucket, netWBBucket} {
		if err := c.direct.MakeBucket(ctx, b, minio.MakeBucketOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	seeded := make(map[string][32]byte)
	for i := range n {
		data := randomBytes(uint64(9000+i), 100<<10+i*25<<10)
		key := fmt.Sprintf("data/obj-%03d", i)
		if _, err := c.direct.PutObject(ctx, netDataBucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
		seeded[key] = sha256.Sum256(data)
	}
	return seeded
}

// startNetLoad starts workers on c over the seeded data set.
func startNetLoad(c *netCluster, seeded map[string][32]byte, workers int) *netLoad {
	l := &netLoad{c: c, seeded: seeded, stats: make(map[string]*netStats),
		acked: make(map[string]netWrite), stop: make(chan struct{})}
	for k := range seeded {
		l.keys = append(l.keys, k)
	}
	sort.Strings(l.keys)
	l.setPhase("start")
	for w := range workers {
		l.wg.Add(1)
		go l.worker(uint64(w))
	}
	return l
}

// setPhase starts phase name: requests judged from now on count in it.
func (l *netLoad) setPhase(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.phase = name
	l.order = append(l.order, name)
	l.stats[name] = &netStats{ops: make(map[string]int), failed: make(map[string]int)}
}

// run starts phase name and waits (bounded) for n judged requests in it.
func (l *netLoad) run(t *testing.T, name string, n int64) {
	t.Helper()
	l.setPhase(name)
	target := l.judged.Load() + n
	deadline := time.Now().Add(5 * time.Minute)
	for l.judged.Load() < target {
		if time.Now().After(deadline) {
			t.Fatalf("phase %q: only %d of %d requests judged in 5 minutes", name, n-(target-l.judged.Load()), n)
		}
		time.Sleep(50 * time.Millisecond) // polling interval
	}
}

// hold keeps the load running through the current phase for d: how
// long a fault lasts, not a wait for anything.
func (l *netLoad) hold(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-time.After(d):
	case <-t.Context().Done():
	}
}

// halt stops the workers and waits for them.
func (l *netLoad) halt() {
	close(l.stop)
	l.wg.Wait()
}

func (l *netLoad) worker(seed uint64) {
	defer l.wg.Done()
	rng := rand.New(rand.NewPCG(seed, 77))
	for {
		select {
		case <-l.stop:
			return
		default:
		}
		nd, faults := l.c.pick(rng.IntN(1 << 20))
		if nd == nil {
			time.Sleep(50 * time.Millisecond) // no node up: poll
			continue
		}
		kind := l.kind(rng)
		ctx, cancel := context.WithTimeout(context.Background(), netRequestBound+15*time.Second)
		start := time.Now()
		err := l.do(ctx, rng, nd, kind)
		took := time.Since(start)
		cancel()
		if l.c.undisturbed(nd, faults) {
			l.judge(nd, kind, took, err)
		}
		// Pacing, not a wait for anything: six clients at full tilt
		// would starve the tests of other packages running beside this
		// one on a 2-core machine.
		select {
		case <-l.stop:
			return
		case <-time.After(netPace):
		}
	}
}

// netPace is the pause between one worker's requests.
const netPace = 20 * time.Millisecond

// kind picks a request kind: mostly reads, as training is.
func (l *netLoad) kind(rng *rand.Rand) string {
	switch r := rng.IntN(100); {
	case r < 45:
		return "read"
	case r < 60:
		return "read-written"
	case r < 75:
		return "put-wt"
	case r < 90:
		return "put-wb"
	default:
		return "list"
	}
}

// do sends one request of kind through nd. Wrong answers are violations
// whatever happened to the node; errors are returned for judging.
func (l *netLoad) do(ctx context.Context, rng *rand.Rand, nd *netNode, kind string) error {
	switch kind {
	case "read":
		key := l.keys[rng.IntN(len(l.keys))]
		return l.read(ctx, nd, netDataBucket, key, l.seeded[key])
	case "read-written":
		l.mu.Lock()
		if len(l.ackedKeys) == 0 {
			l.mu.Unlock()
			return nil
		}
		bk := l.ackedKeys[rng.IntN(len(l.ackedKeys))]
		want := l.acked[bk].sha
		l.mu.Unlock()
		bucket, key, _ := strings.Cut(bk, "/")
		return l.read(ctx, nd, bucket, key, want)
	case "put-wt", "put-wb":
		bucket := netWTBucket
		if kind == "put-wb" {
			bucket = netWBBucket
		}
		n := l.seq.Add(1)
		data := randomBytes(uint64(100000+n), 30<<10+rng.IntN(400<<10))
		key := fmt.Sprintf("w/%s-%05d", nd.id, n)
		if _, err := nd.client.PutObject(ctx, bucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
			return err
		}
		l.mu.Lock()
		sum := md5.Sum(data)
		l.acked[bucket+"/"+key] = netWrite{sha: sha256.Sum256(data), md5: hex.EncodeToString(sum[:])}
		l.ackedKeys = append(l.ackedKeys, bucket+"/"+key)
		l.mu.Unlock()
		return nil
	default:
		return l.list(ctx, nd)
	}
}

// read GETs bucket/key through nd and checks its bytes against want.
func (l *netLoad) read(ctx context.Context, nd *netNode, bucket, key string, want [32]byte) error {
	obj, err := nd.client.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return err
	}
	defer obj.Close()
	data, err := io.ReadAll(obj)
	if err != nil {
		return err
	}
	if sha256.Sum256(data) != want {
		l.violate("%s/%s through %s: %d bytes that are not the object", bucket, key, nd.id, len(data))
	}
	return nil
}

// list lists the seeded prefix through nd; a listing that succeeds must
// hold every seeded key.
func (l *netLoad) list(ctx context.Context, nd *netNode) error {
	got := make(map[string]bool)
	for o := range nd.client.ListObjects(ctx, netDataBucket, minio.ListObjectsOptions{Prefix: "data/", Recursive: true}) {
		if o.Err != nil {
			return o.Err
		}
		got[o.Key] = true
	}
	for _, k := range l.keys {
		if !got[k] {
			l.violate("LIST through %s succeeded without %s (%d keys)", nd.id, k, len(got))
			break
		}
	}
	return nil
}

func (l *netLoad) violate(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.violations) < 20 {
		l.violations = append(l.violations, fmt.Sprintf("[%s] ", l.phase)+fmt.Sprintf(format, args...))
	}
}

// judge records a request through a node no fault touched meanwhile.
func (l *netLoad) judge(nd *netNode, kind string, took time.Duration, err error) {
	if took > netRequestBound {
		l.violate("%s through %s took %v (bound %v): %v", kind, nd.id, took.Round(time.Millisecond), netRequestBound, err)
	}
	l.mu.Lock()
	st := l.stats[l.phase]
	st.ops[kind]++
	st.slowest = max(st.slowest, took)
	if err != nil {
		st.failed[kind]++
		if len(st.errs) < 5 {
			st.errs = append(st.errs, fmt.Sprintf("%s via %s: %v", kind, nd.id, err))
		}
	}
	l.mu.Unlock()
	l.judged.Add(1)
}

// report logs each phase's requests, and fails t for violations and for
// failed reads of the seeded data in the phases that allow none.
func (l *netLoad) report(t *testing.T, readsMustSucceed func(phase string) bool) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, name := range l.order {
		st := l.stats[name]
		var parts []string
		for _, k := range []string{"read", "read-written", "put-wt", "put-wb", "list"} {
			parts = append(parts, fmt.Sprintf("%s %d/%d", k, st.ops[k]-st.failed[k], st.ops[k]))
		}
		t.Logf("%-28s ok/judged: %s; slowest %v", name, strings.Join(parts, ", "), st.slowest.Round(time.Millisecond))
		for _, e := range st.errs {
			t.Logf("    %s", e)
		}
		if st.failed["read"] > 0 && readsMustSucceed(name) {
			t.Errorf("phase %q: %d of %d reads of the cached data set failed", name, st.failed["read"], st.ops["read"])
		}
	}
	for _, v := range l.violations {
		t.Error(v)
	}
}

// verifyAcked checks every acknowledged write at the origin (write-back
// ones once uploaded, waited for), by the listing's ETag (the MD5 of a
// single PUT) or else by its bytes; and a sample of them, spread over the
// whole run, through every node.
func (l *netLoad) verifyAcked(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	keys := append([]string(nil), l.ackedKeys...)
	l.mu.Unlock()
	missing := keys
	deadline := time.Now().Add(3 * time.Minute)
	for {
		missing = l.notAtOrigin(t, missing)
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d acknowledged writes are not at the origin, or differ, 3 minutes after the load: %v",
				len(missing), len(keys), missing[:min(5, len(missing))])
		}
		time.Sleep(200 * time.Millisecond) // polling interval
	}
	step := max(1, len(keys)/100)
	sampled := 0
	for i := 0; i < len(keys); i += step {
		sampled++
		bucket, key, _ := strings.Cut(keys[i], "/")
		for _, nd := range l.c.nodes {
			ctx, cancel := context.WithTimeout(context.Background(), netRequestBound)
			err := l.read(ctx, nd, bucket, key, l.acked[keys[i]].sha)
			cancel()
			if err != nil {
				t.Errorf("acknowledged %s through %s after the load: %v", keys[i], nd.id, err)
			}
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.violations) > 0 {
		t.Errorf("reading acknowledged writes back: %v", l.violations)
	}
	t.Logf("%d acknowledged writes at the origin; %d of them read back through all %d nodes", len(keys), sampled, len(l.c.nodes))
}

// notAtOrigin returns the keys of keys ("bucket/key") the origin does not
// hold as acknowledged.
func (l *netLoad) notAtOrigin(t *testing.T, keys []string) []string {
	t.Helper()
	ctx := context.Background()
	etags := make(map[string]string)
	for _, b := range []string{netWTBucket, netWBBucket} {
		for o := range l.c.direct.ListObjects(ctx, b, minio.ListObjectsOptions{Recursive: true}) {
			if o.Err != nil {
				t.Fatalf("listing %s at the origin: %v", b, o.Err)
			}
			etags[b+"/"+o.Key] = strings.Trim(o.ETag, `"`)
		}
	}
	var out []string
	for _, bk := range keys {
		etag, ok := etags[bk]
		switch {
		case !ok:
			out = append(out, bk)
		case etag == l.acked[bk].md5:
		case !l.sameAtOrigin(bk):
			out = append(out, bk)
		}
	}
	return out
}

// sameAtOrigin reports whether the origin's bytes of bk are the ones
// acknowledged.
func (l *netLoad) sameAtOrigin(bk string) bool {
	bucket, key, _ := strings.Cut(bk, "/")
	obj, err := l.c.direct.GetObject(context.Background(), bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return false
	}
	defer obj.Close()
	data, err := io.ReadAll(obj)
	return err == nil && sha256.Sum256(data) == l.acked[bk].sha
}
