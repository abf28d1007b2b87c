// Tests of per-bucket quotas: a capped bucket stops at its quota while
// another keeps filling, and gets room again after eviction or deletion;
// BucketBytes follows Put, DeleteObject, corruption, eviction and reopen;
// a lowered quota applies from the next Put; and the counts stay exact
// under concurrent Puts, deletes and evictions.
package disk

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/storetest"
)

// quotaOptions: 32 KiB segments, chunks of 16 KiB and more in files.
func quotaOptions(dir, policy string, q store.Quotas) Options {
	return Options{Dir: dir, Capacity: 256 << 10, SegmentSize: 32 << 10, SmallMax: 16 << 10,
		LowWater: 0.8, Policy: policy, Quotas: q}
}

// qchunk returns chunk 0 of key i in bucket, of size bytes.
func qchunk(bucket string, i, size int) (store.ChunkID, []byte) {
	id, data := chunk(fmt.Sprintf("k%d", i), 0, size)
	id.Bucket = bucket
	return id, data
}

// truth sums, per bucket, the lengths of the index entries in live units:
// the chunks the tier really holds.
func truth(t *testing.T, tier *Tier) map[string]int64 {
	t.Helper()
	perUnit, err := tier.idx.UnitBucketBytes()
	if err != nil {
		t.Fatal(err)
	}
	sums := make(map[string]int64)
	for u, m := range perUnit {
		if !tier.isLive(u) {
			continue
		}
		for b, n := range m {
			sums[b] += n
		}
	}
	return sums
}

// checkCounts asserts that BucketBytes equals the truth for every bucket
// the tier holds or counts, and is 0 for the others named.
func checkCounts(t *testing.T, tier *Tier, buckets ...string) {
	t.Helper()
	want := truth(t, tier)
	tier.qmu.Lock()
	for b := range tier.bucketBytes {
		buckets = append(buckets, b)
	}
	tier.qmu.Unlock()
	for b := range want {
		buckets = append(buckets, b)
	}
	for _, b := range buckets {
		if got := tier.BucketBytes(b); got != want[b] {
			t.Fatalf("BucketBytes(%q) = %d, the tier holds %d", b, got, want[b])
		}
	}
}

// TestQuotaCapsBucket: Puts of the capped bucket stop at its quota (and
// change nothing, and are not declines) while the other bucket keeps
// filling; eviction, then deletion, give it room again.
func TestQuotaCapsBucket(t *testing.T) {
	forEachMode(t, func(t *testing.T, policy string, always bool) {
		q := storetest.NewQuotas()
		q.Set("capped", 40<<10)
		tier := openFixed(t, quotaOptions(t.TempDir(), policy, q))
		put := tier.Put
		if always {
			put = tier.PutAlways
		}
		for i := range 10 { // 40 KiB: exactly the quota
			id, data := qchunk("capped", i, 4<<10)
			if err := put(id, data); err != nil {
				t.Fatalf("put %d: %v", i, err)
			}
		}
		before := tier.Stats()
		id, data := qchunk("capped", 10, 4<<10)
		calls := q.Calls()
		if err := put(id, data); !errors.Is(err, store.ErrOverQuota) {
			t.Fatalf("put past the quota: %v, want ErrOverQuota", err)
		}
		if n := q.Calls() - calls; n != 1 {
			t.Fatalf("Quota asked %d times by one Put, want 1", n)
		}
		if after := tier.Stats(); after != before {
			t.Fatalf("a refused Put changed the tier: %+v -> %+v", before, after)
		}
		mustMiss(t, tier, id)
		if got := tier.BucketBytes("capped"); got != 40<<10 {
			t.Fatalf("BucketBytes(capped) = %d, want %d", got, 40<<10)
		}
		// The other bucket fills past the capacity, evicting the capped
		// bucket's oldest segments.
		p := &presser{tier: tier, always: true}
		for tier.BucketBytes("capped") == 40<<10 && p.i < 200 {
			p.press(t, 1)
		}
		if got := tier.BucketBytes("capped"); got >= 40<<10 {
			t.Fatalf("capped bucket still at %d after %d chunks of pressure", got, p.i)
		}
		checkCounts(t, tier, "capped", "b")
		if err := tier.PutAlways(id, data); err != nil {
			t.Fatalf("put after eviction: %v", err)
		}
		mustGet(t, tier, id, data)
		checkCounts(t, tier, "capped", "b")
		// Fill to the quota again; a delete makes room for one more.
		for i := 11; tier.BucketBytes("capped")+4<<10 <= 40<<10; i++ {
			id, data := qchunk("capped", i, 4<<10)
			if err := tier.PutAlways(id, data); err != nil {
				t.Fatalf("refill %d: %v", i, err)
			}
		}
		id, data = qchunk("capped", 100, 4<<10)
		if err := tier.PutAlways(id, data); !errors.Is(err, store.ErrOverQuota) {
			t.Fatalf("put past the quota again: %v", err)
		}
		if err := tier.DeleteObject("capped", "k10"); err != nil {
			t.Fatal(err)
		}
		if err := tier.PutAlways(id, data); err != nil {
			t.Fatalf("put after a delete: %v", err)
		}
		if tier.Stats().Declined != 0 && policy == PolicyLRU {
			t.Fatalf("LRU declined: %+v", tier.Stats())
		}
		checkCounts(t, tier, "capped", "b")
	})
}

// TestQuotaNotDeclined: an over-quota Put into a full TinyLFU tier is
// refused as over quota, before admission, and is not counted as a
// decline.
func TestQuotaNotDeclined(t *testing.T) {
	q := storetest.NewQuotas()
	tier := openFixed(t, quotaOptions(t.TempDir(), PolicyTinyLFU, q))
	p := &presser{tier: tier, always: true}
	p.press(t, 80) // full: admission now compares
	// Cold chunks go in until the band below HighWater is used up.
	var id store.ChunkID
	var data []byte
	for i := 0; ; i++ {
		if i == 50 {
			t.Fatal("no cold chunk declined by a full tier")
		}
		id, data = qchunk("capped", i, 4<<10)
		err := tier.Put(id, data)
		if errors.Is(err, store.ErrNotAdmitted) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	declined := tier.Stats().Declined
	q.Set("capped", 1<<10)
	if err := tier.Put(id, data); !errors.Is(err, store.ErrOverQuota) {
		t.Fatalf("put over quota: %v, want ErrOverQuota", err)
	}
	if got := tier.Stats().Declined; got != declined {
		t.Fatalf("Declined went %d -> %d on an over-quota Put", declined, got)
	}
}

// qput stores chunk i of bucket and records its size in held.
func qput(t *testing.T, tier *Tier, held map[string]int64, bucket string, i, size int) store.ChunkID {
	t.Helper()
	id, data := qchunk(bucket, i, size)
	if err := tier.PutAlways(id, data); err != nil {
		t.Fatalf("PutAlways(%+v): %v", id, err)
	}
	held[bucket] += int64(size)
	return id
}

func wantBytes(t *testing.T, tier *Tier, want map[string]int64) {
	t.Helper()
	for b, n := range want {
		if got := tier.BucketBytes(b); got != n {
			t.Fatalf("BucketBytes(%q) = %d, want %d", b, got, n)
		}
	}
}

// TestBucketBytesFollow: BucketBytes follows Puts of small and large
// chunks, DeleteObject, a corruption drop, reopen, and eviction (then
// reopen again).
func TestBucketBytesFollow(t *testing.T) {
	dir := t.TempDir()
	opts := quotaOptions(dir, PolicyLRU, nil)
	tier, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tier.Close() }()
	held := map[string]int64{"x": 0, "y": 0, "none": 0}
	var corrupt store.ChunkID
	for i := range 12 {
		size := 3 << 10
		if i%4 == 3 {
			size = 20 << 10 // a chunk file
		}
		qput(t, tier, held, "x", i, size)
		id := qput(t, tier, held, "y", i, size+100)
		if i == 5 {
			corrupt = id
		}
	}
	wantBytes(t, tier, held)
	for _, i := range []int{1, 3} { // a segment chunk and a chunk file
		if err := tier.DeleteObject("x", fmt.Sprintf("k%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	held["x"] -= 3<<10 + 20<<10
	wantBytes(t, tier, held)
	loc := lookup(t, tier, corrupt)
	flipByte(t, tier.segPath(loc.Unit), loc.Offset)
	mustMiss(t, tier, corrupt)
	mustMiss(t, tier, corrupt) // a second drop must not count twice
	held["y"] -= loc.Length
	wantBytes(t, tier, held)
	checkCounts(t, tier, "x", "y")

	reopen := func() {
		t.Helper()
		if err := tier.Close(); err != nil {
			t.Fatal(err)
		}
		if tier, err = Open(opts); err != nil {
			t.Fatal(err)
		}
	}
	reopen()
	wantBytes(t, tier, held)
	checkCounts(t, tier, "x", "y")

	p := &presser{tier: tier, always: true}
	p.press(t, 20) // bucket "b": evicts x's and y's oldest units
	if tier.Stats().Evictions == 0 || tier.BucketBytes("x") >= held["x"] || tier.BucketBytes("y") >= held["y"] {
		t.Fatalf("no eviction of x and y: x %d, y %d, %+v", tier.BucketBytes("x"), tier.BucketBytes("y"), tier.Stats())
	}
	checkCounts(t, tier, "x", "y", "b")
	after := map[string]int64{"x": tier.BucketBytes("x"), "y": tier.BucketBytes("y"), "b": tier.BucketBytes("b")}
	reopen()
	wantBytes(t, tier, after)
	checkCounts(t, tier, "x", "y", "b")
}

// TestQuotaChange: a lowered quota refuses the next Put but keeps what
// the bucket holds; removing it lets Puts in again. Get never asks.
func TestQuotaChange(t *testing.T) {
	q := storetest.NewQuotas()
	q.Set("c", 100<<10)
	tier := openFixed(t, quotaOptions(t.TempDir(), PolicyLRU, q))
	held := map[string]int64{}
	for i := range 10 {
		qput(t, tier, held, "c", i, 4<<10)
	}
	q.Set("c", 20<<10)
	id, data := qchunk("c", 10, 4<<10)
	if err := tier.Put(id, data); !errors.Is(err, store.ErrOverQuota) {
		t.Fatalf("put after lowering the quota: %v, want ErrOverQuota", err)
	}
	wantBytes(t, tier, held)
	calls := q.Calls()
	for i := range 10 {
		id, data := qchunk("c", i, 4<<10)
		mustGet(t, tier, id, data)
	}
	if q.Calls() != calls {
		t.Fatal("Get asked the quotas")
	}
	q.Set("c", 0)
	qput(t, tier, held, "c", 10, 4<<10)
	wantBytes(t, tier, held)
}

// TestQuotaConcurrent: Puts (small and large, Put and PutAlways), deletes
// and the evictions they cause, from several goroutines, on three buckets
// one of which is capped. The capped bucket never goes past its quota,
// and at the end every count equals what the tier holds.
func TestQuotaConcurrent(t *testing.T) {
	for _, policy := range []string{PolicyLRU, PolicyTinyLFU} {
		t.Run(policy, func(t *testing.T) {
			q := storetest.NewQuotas()
			const quota = 48 << 10
			q.Set("q", quota)
			tier := openFixed(t, quotaOptions(t.TempDir(), policy, q))
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			stop := make(chan struct{})
			for g := range 4 {
				wg.Go(func() { errs <- quotaWriter(tier, g) })
			}
			var watch sync.WaitGroup
			watch.Go(func() {
				for {
					select {
					case <-stop:
						errs <- nil
						return
					default:
					}
					if n := tier.BucketBytes("q"); n > quota {
						errs <- fmt.Errorf("capped bucket at %d, past its quota %d", n, quota)
						return
					}
					runtime.Gosched()
				}
			})
			wg.Wait()
			close(stop)
			watch.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			if tier.Stats().Evictions == 0 {
				t.Fatal("no eviction: the test did not exercise it")
			}
			checkCounts(t, tier, "q", "r", "s")
			tier.qmu.Lock()
			pending := len(tier.pending)
			tier.qmu.Unlock()
			if pending != 0 {
				t.Fatalf("quota reservations left over: %d", pending)
			}
		})
	}
}

// quotaWriter puts chunks into buckets q, r and s, and deletes some.
func quotaWriter(tier *Tier, g int) error {
	buckets := []string{"q", "r", "s"}
	for i := range 120 {
		bucket := buckets[(i+g)%3]
		n := g*1000 + i%40
		size := 3<<10 + g*100 // sizes depend on the ID only: chunks are immutable
		if n%7 == 0 {
			size = 18 << 10
		}
		id, data := qchunk(bucket, n, size)
		put := tier.Put
		if i%2 == 0 {
			put = tier.PutAlways
		}
		err := put(id, data)
		if err != nil && !errors.Is(err, store.ErrNotAdmitted) && !errors.Is(err, store.ErrOverQuota) {
			return fmt.Errorf("put %+v: %w", id, err)
		}
		if errors.Is(err, store.ErrOverQuota) && bucket != "q" {
			return fmt.Errorf("put %+v: over quota in an uncapped bucket", id)
		}
		if i%5 == 4 {
			victim := fmt.Sprintf("k%d", g*1000+(i*7)%40)
			if err := tier.DeleteObject(buckets[i%3], victim); err != nil {
				return fmt.Errorf("delete %s: %w", victim, err)
			}
		}
	}
	return nil
}
