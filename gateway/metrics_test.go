package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/granary-dev/granary/store"
)

// TestBucketMetrics: a cold read counts a miss and origin bytes for its
// bucket, each warm one a hit and its bytes (the first looks the bucket's
// counters up, the second uses them as kept), under the bucket's label.
func TestBucketMetrics(t *testing.T) {
	r := newRig(t, rigOptions{fresh: Freshness{Mode: Immutable}})
	data := randBytes(t, 10000)
	r.seed("k", data)
	for range 3 {
		if got := r.read("k", nil); !bytes.Equal(got, data) {
			t.Fatal("wrong bytes")
		}
		settle(t, r.e) // the first read's flight lands in RAM before the second
	}
	b := r.bucket
	if got := testutil.ToFloat64(r.e.m.misses.WithLabelValues(b)); got != 1 {
		t.Errorf("misses{bucket=%s} = %v, want 1", b, got)
	}
	if got := testutil.ToFloat64(r.e.m.originBytes.WithLabelValues(b)); got != float64(len(data)) {
		t.Errorf("origin bytes{bucket=%s} = %v, want %d", b, got, len(data))
	}
	if got := testutil.ToFloat64(r.e.m.hits.WithLabelValues(b, "ram")); got != 2 {
		t.Errorf("hits{bucket=%s,tier=ram} = %v, want 2", b, got)
	}
	if got := testutil.ToFloat64(r.e.m.hitBytes.WithLabelValues(b, "ram")); got != float64(2*len(data)) {
		t.Errorf("hit bytes{bucket=%s,tier=ram} = %v, want %d", b, got, 2*len(data))
	}
	if hits, _ := r.e.Lookups(b); hits != 2 {
		t.Errorf("Lookups(%s) counts %d hits, want 2", b, hits)
	}
}

// TestWarmIsNoLookup: a warm-up serves no client, so neither its fetch
// nor its finding the chunks cached counts as a miss or a hit; a client's
// read after it is a hit.
func TestWarmIsNoLookup(t *testing.T) {
	r := newRig(t, rigOptions{fresh: Freshness{Mode: Immutable}, chunk: 4096})
	data := randBytes(t, 10000)
	info := r.seed("k", data)
	for range 2 { // a fetch, then every chunk found cached
		if err := r.e.WarmObject(context.Background(), info); err != nil {
			t.Fatal(err)
		}
		settle(t, r.e)
	}
	if hits, misses := r.e.Lookups(r.bucket); hits != 0 || misses != 0 {
		t.Fatalf("after warm-ups: %d hits, %d misses", hits, misses)
	}
	if got := r.read("k", nil); !bytes.Equal(got, data) {
		t.Fatal("wrong bytes")
	}
	if hits, misses := r.e.Lookups(r.bucket); hits != 3 || misses != 0 {
		t.Fatalf("a read of 3 warmed chunks: %d hits, %d misses", hits, misses)
	}
	if got := testutil.ToFloat64(r.e.m.misses.WithLabelValues(r.bucket)); got != 0 {
		t.Errorf("misses{bucket=%s} = %v, want 0", r.bucket, got)
	}
}

// TestBucketLabelsBounded: the first maxBucketLabels buckets keep their
// own label, every later one gets otherBucket, whoever asks first and
// however many ask at once.
func TestBucketLabelsBounded(t *testing.T) {
	var l bucketLabels
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range maxBucketLabels {
				l.label(fmt.Sprintf("b-%d-%d", g%2, i)) // two goroutines per name
			}
		})
	}
	wg.Wait()
	own := 0
	for g := range 2 {
		for i := range maxBucketLabels {
			name := fmt.Sprintf("b-%d-%d", g, i)
			switch got := l.label(name); got {
			case name:
				own++
			case otherBucket:
			default:
				t.Fatalf("label(%s) = %s", name, got)
			}
		}
	}
	if own != maxBucketLabels {
		t.Errorf("%d buckets with their own label, want %d", own, maxBucketLabels)
	}
	if got := l.label("a-new-one"); got != otherBucket {
		t.Errorf("a bucket past the bound got %q, want %q", got, otherBucket)
	}
}

// TestOriginResult: a missing key, bucket or upload is the origin's
// answer, not its failure, so the error rate the alerts watch leaves it
// out; a refusal is the client's mistake; anything else is an error.
func TestOriginResult(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, "ok"},
		{fmt.Errorf("stat k: %w", store.ErrNoSuchKey), "notfound"},
		{store.ErrNoSuchBucket, "notfound"},
		{store.ErrNoSuchUpload, "notfound"},
		{&store.OriginError{Status: 400, Code: "InvalidArgument"}, "refused"},
		{store.ErrOriginDown, "error"},
		{store.ErrUnavailable, "error"},
		{errors.New("connection reset"), "error"},
	} {
		if got := originResult(c.err); got != c.want {
			t.Errorf("originResult(%v) = %q, want %q", c.err, got, c.want)
		}
	}
	m := newMetrics()
	o := countingOrigin{m: m}
	o.observe("stat", time.Now(), store.ErrNoSuchKey)
	if got := testutil.ToFloat64(m.originReqs.WithLabelValues("stat", "error")); got != 0 {
		t.Errorf("a missing key counted %v origin errors, want 0", got)
	}
	if got := testutil.ToFloat64(m.originReqs.WithLabelValues("stat", "notfound")); got != 1 {
		t.Errorf("a missing key counted %v notfound, want 1", got)
	}
}
