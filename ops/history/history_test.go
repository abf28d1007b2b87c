package history

import (
	"fmt"
	"testing"
	"time"
)

// counting is a Source whose counters the test sets.
type counting struct{ snap Snapshot }

func (c *counting) read() Snapshot {
	b := make(map[string]Counters, len(c.snap.Buckets))
	for k, v := range c.snap.Buckets {
		b[k] = v
	}
	return Snapshot{Node: c.snap.Node, Buckets: b}
}

func TestIntervalsAreTheGrowthBetweenSamples(t *testing.T) {
	src := &counting{snap: Snapshot{Buckets: map[string]Counters{}}}
	r := New(src.read, Options{Every: time.Second, Span: time.Minute})
	t0 := time.Unix(1_700_000_000, 0)
	r.Record(t0)
	if got := r.Node(); len(got) != 0 {
		t.Fatalf("one sample made intervals: %v", got)
	}
	src.snap.Node = Counters{Hits: 30, Misses: 10, BytesOut: 4000, OriginRequests: 2, OriginBytes: 1000}
	src.snap.Buckets["a"] = Counters{Hits: 30, Misses: 10, BytesOut: 4000}
	r.Record(t0.Add(2 * time.Second))
	src.snap.Node.Hits, src.snap.Node.OriginErrors = 35, 1
	src.snap.Buckets["a"] = Counters{Hits: 35, Misses: 10, BytesOut: 4000}
	r.Record(t0.Add(3 * time.Second))

	got := r.Node()
	want := []Point{
		{At: t0.Add(2 * time.Second), Seconds: 2, Hits: 30, Misses: 10, BytesOut: 4000, OriginRequests: 2, OriginBytes: 1000},
		{At: t0.Add(3 * time.Second), Seconds: 1, Hits: 5, OriginErrors: 1},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("node points:\n got %v\nwant %v", got, want)
	}
	// Bucket a was first seen in the second sample: it counts from zero.
	if b := r.Bucket("a"); len(b) != 2 || b[0].Hits != 30 || b[0].Misses != 10 || b[1].Hits != 5 || b[1].Misses != 0 {
		t.Fatalf("bucket a: %v", b)
	}
	if b := r.Bucket("nope"); len(b) != 0 {
		t.Fatalf("an unknown bucket has points: %v", b)
	}
}

func TestRingKeepsTheSpanAndCountersThatFall(t *testing.T) {
	src := &counting{}
	r := New(src.read, Options{Every: time.Second, Span: 10 * time.Second})
	t0 := time.Unix(1_700_000_000, 0)
	for i := range 100 {
		src.snap.Node.Hits = int64(i)
		r.Record(t0.Add(time.Duration(i) * time.Second))
	}
	got := r.Node()
	if len(got) != 10 {
		t.Fatalf("%d intervals kept, want the span's 10", len(got))
	}
	if first, last := got[0].At, got[len(got)-1].At; !first.Equal(t0.Add(90*time.Second)) || !last.Equal(t0.Add(99*time.Second)) {
		t.Fatalf("kept %v .. %v", first, last)
	}
	src.snap.Node.Hits = 0 // the source restarted
	r.Record(t0.Add(100 * time.Second))
	if p := r.Node(); p[len(p)-1].Hits != 0 {
		t.Fatalf("a falling counter gave %d", p[len(p)-1].Hits)
	}
}

func TestBucketsAreBounded(t *testing.T) {
	src := &counting{snap: Snapshot{Buckets: map[string]Counters{}}}
	r := New(src.read, Options{Every: time.Second, MaxBuckets: 3})
	t0 := time.Unix(1_700_000_000, 0)
	for i := range 10 {
		src.snap.Buckets[fmt.Sprintf("b%d", i)] = Counters{Hits: int64(i)}
		r.Record(t0.Add(time.Duration(i) * time.Second))
	}
	kept := 0
	for i := range 10 {
		if len(r.Bucket(fmt.Sprintf("b%d", i))) > 0 {
			kept++
		}
	}
	if kept != 3 || len(r.tracked) != 3 {
		t.Fatalf("%d buckets kept (%d tracked), want 3", kept, len(r.tracked))
	}
}

func TestStartSamplesUntilStop(t *testing.T) {
	calls := make(chan struct{}, 100)
	r := New(func() Snapshot { calls <- struct{}{}; return Snapshot{} }, Options{Every: 10 * time.Millisecond})
	r.Stop() // before Start: nothing to stop
	r.Start()
	for range 3 {
		select {
		case <-calls:
		case <-time.After(time.Minute):
			t.Fatal("no sample within a minute")
		}
	}
	r.Stop()
	r.Stop()
	select {
	case <-r.done:
	default:
		t.Fatal("the sampler still runs after Stop")
	}
}
