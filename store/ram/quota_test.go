// Tests of per-bucket quotas in the RAM tier: a capped bucket stops at
// its quota while others fill, and gets chunks again once eviction or
// deletes free some; BucketBytes follows Put, DeleteObject, eviction and
// Close; quota changes apply from the next Put; and the counts stay exact
// under concurrency.
package ram

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/storetest"
)

// quotaIDs returns n one-chunk IDs bucket/k-NNNNNN; buckets of equal
// length give chunks of equal charge (with pinData, 256 bytes of data).
func quotaIDs(bucket string, n int) []store.ChunkID {
	ids := make([]store.ChunkID, n)
	for i := range ids {
		ids[i] = store.ChunkID{Bucket: bucket, Key: fmt.Sprintf("k-%06d", i), ETag: "e1"}
	}
	return ids
}

// quotaChunk is the data length of a chunk of quotaIDs with pinData.
const quotaChunk = 256

// checkBucketBytes verifies the counting invariant: the tier's per-bucket
// counts are exactly the data bytes of the entries it holds, with no
// stale bucket in the map. It returns the counts.
func checkBucketBytes(t *testing.T, tier *Tier) map[string]int64 {
	t.Helper()
	tier.mu.Lock()
	defer tier.mu.Unlock()
	want := make(map[string]int64)
	for i := range tier.shards {
		s := &tier.shards[i]
		s.mu.Lock()
		for _, e := range s.entries {
			want[e.id.Bucket] += int64(len(e.data))
		}
		s.mu.Unlock()
	}
	tier.bytes.mu.Lock()
	stored := len(tier.bytes.n)
	tier.bytes.mu.Unlock()
	nonZero := 0
	for b, n := range want {
		if got := tier.BucketBytes(b); got != n {
			t.Errorf("BucketBytes(%q) = %d; entries hold %d", b, got, n)
		}
		if n != 0 {
			nonZero++
		}
	}
	if stored != nonZero {
		t.Errorf("count map has %d buckets; entries have %d with data", stored, nonZero)
	}
	return want
}

// putAll puts every id with p, expecting want from each.
func putAll(t *testing.T, tier *Tier, p putter, ids []store.ChunkID, want error) {
	t.Helper()
	for _, id := range ids {
		if err := p.put(tier, id, pinData(id)); !errors.Is(err, want) {
			t.Fatalf("%s(%v) = %v; want %v", p.name, id, err, want)
		}
	}
}

// TestQuotaCapsBucket: with a quota of 5 chunks on "qa" in a tier of 20,
// qa's Puts stop at 5 (ErrOverQuota, nothing changed, no decline, the
// miss mark kept) while "qb" fills the rest; pressure from qb evicts 3 of
// qa's, deletes of qb make room, and qa takes 3 new chunks up to its
// quota again; a delete of qa's own lets one more in.
func TestQuotaCapsBucket(t *testing.T) {
	for _, pol := range []string{PolicyLRU, PolicyTinyLFU} {
		for _, p := range putters {
			t.Run(pol+"/"+p.name, func(t *testing.T) { testQuotaCapsBucket(t, pol, p) })
		}
	}
}

func testQuotaCapsBucket(t *testing.T, pol string, p putter) {
	qa, qb := quotaIDs("qa", 10), quotaIDs("qb", 20)
	cost := charge(qa[0], pinData(qa[0]))
	quotas := storetest.NewQuotas()
	quotas.Set("qa", 5*quotaChunk)
	tier := New(Options{Capacity: 20 * cost, Policy: pol, Quotas: quotas})
	defer tier.Close()

	putAll(t, tier, p, qa[:5], nil)
	before := tier.Stats()
	if _, err := tier.Get(qa[5]); !errors.Is(err, store.ErrNotFound) { // leaves a miss mark
		t.Fatalf("Get(%v): %v", qa[5], err)
	}
	putAll(t, tier, p, qa[5:], store.ErrOverQuota)
	if after := tier.Stats(); after != before {
		t.Fatalf("over-quota Puts changed Stats: %+v -> %+v", before, after)
	}
	if tier.adm != nil && !tier.adm.takeMiss(tier.chunkHash(tier.objectHash("qa", qa[5].Key), qa[5])) {
		t.Fatal("an over-quota Put consumed the miss mark")
	}
	if n := present(t, tier, qa); n != 5 {
		t.Fatalf("tier holds %d of qa's chunks; want 5", n)
	}
	putAll(t, tier, p, qb[:15], nil) // the tier is full now
	if got := tier.BucketBytes("qb"); got != 15*quotaChunk {
		t.Fatalf("BucketBytes(qb) = %d; want %d", got, 15*quotaChunk)
	}

	// Pressure from qb: each Put evicts the oldest chunk, one of qa's (a
	// filtered Put is admitted: asked for 3 times, one of them its miss,
	// against chunks asked for once, by present).
	for _, id := range qb[15:18] {
		for range 3 {
			_, _ = tier.Get(id)
		}
		putAll(t, tier, p, []store.ChunkID{id}, nil)
	}
	if s := tier.Stats(); s.Evictions != 3 || s.Chunks != 20 {
		t.Fatalf("Stats after pressure %+v; want 3 evictions, 20 chunks", s)
	}
	if got := tier.BucketBytes("qa"); got != 2*quotaChunk {
		t.Fatalf("BucketBytes(qa) = %d after 3 evictions; want %d", got, 2*quotaChunk)
	}
	for _, id := range qb[:3] { // room for 3, so no admission
		if err := tier.DeleteObject(id.Bucket, id.Key); err != nil {
			t.Fatal(err)
		}
	}
	putAll(t, tier, p, qa[5:8], nil)
	putAll(t, tier, p, qa[8:9], store.ErrOverQuota)
	if err := tier.DeleteObject("qa", qa[5].Key); err != nil {
		t.Fatal(err)
	}
	putAll(t, tier, p, qa[8:9], nil)
	if got := tier.BucketBytes("qa"); got != 5*quotaChunk {
		t.Fatalf("BucketBytes(qa) = %d; want %d", got, 5*quotaChunk)
	}
	if got := checkBucketBytes(t, tier); got["qb"] != 15*quotaChunk {
		t.Fatalf("qb holds %d bytes; want %d", got["qb"], 15*quotaChunk)
	}
	checkTier(t, tier)
	if d := tier.Stats().Declined; d != 0 {
		t.Fatalf("Declined = %d; over-quota Puts are not declines", d)
	}
}

// TestBucketBytesFollows: BucketBytes counts data bytes (not charges) of
// multi-chunk objects, empty chunks and several versions; a second Put of
// a held chunk adds nothing; DeleteObject, eviction and Close take their
// bytes off; a bucket never seen reads 0. No Quotas set.
func TestBucketBytesFollows(t *testing.T) {
	tier := New(Options{Capacity: 1 << 20, Policy: PolicyLRU})
	defer tier.Close()
	put := func(bucket, key, etag string, index int64, n int) {
		t.Helper()
		id := store.ChunkID{Bucket: bucket, Key: key, ETag: etag, Index: index}
		if err := tier.Put(id, make([]byte, n)); err != nil {
			t.Fatalf("Put(%v): %v", id, err)
		}
	}
	put("a", "x", "e1", 0, 1000)
	put("a", "x", "e1", 1, 500)
	put("a", "x", "e2", 0, 70)
	put("a", "y", "e1", 0, 0)
	put("b", "x", "e1", 0, 300)
	put("a", "x", "e1", 0, 1000) // held already
	want := map[string]int64{"a": 1570, "b": 300, "c": 0}
	for b, n := range want {
		if got := tier.BucketBytes(b); got != n {
			t.Fatalf("BucketBytes(%q) = %d; want %d", b, got, n)
		}
	}
	if err := tier.DeleteObject("a", "x"); err != nil {
		t.Fatal(err)
	}
	if got := tier.BucketBytes("a"); got != 0 {
		t.Fatalf("BucketBytes(a) = %d after deleting x; want 0 (y is empty)", got)
	}
	checkBucketBytes(t, tier)

	// Eviction: a tier of 4 chunks takes 4 of "a" then 2 of "b".
	small := New(Options{Capacity: 4 * charge(quotaIDs("a", 1)[0], pinData(quotaIDs("a", 1)[0])), Policy: PolicyLRU})
	defer small.Close()
	mustPut(t, small, quotaIDs("a", 4))
	mustPut(t, small, quotaIDs("b", 2))
	if a, b := small.BucketBytes("a"), small.BucketBytes("b"); a != 2*quotaChunk || b != 2*quotaChunk {
		t.Fatalf("after eviction BucketBytes a=%d b=%d; want %d each", a, b, 2*quotaChunk)
	}
	checkBucketBytes(t, small)
	_ = small.Close()
	if got := small.BucketBytes("b"); got != 0 {
		t.Fatalf("BucketBytes(b) = %d after Close; want 0", got)
	}
}

// TestQuotaChange: lowering a quota below what the bucket holds refuses
// the next Put and evicts nothing; the bucket takes chunks again once
// deletes bring it under; raising or removing the quota (0 or negative)
// lets Puts through from the next one. Quotas is asked once per Put and
// never on Get.
func TestQuotaChange(t *testing.T) {
	ids := quotaIDs("qa", 12)
	quotas := storetest.NewQuotas()
	quotas.Set("qa", 10*quotaChunk)
	tier := New(Options{Capacity: 1 << 20, Quotas: quotas})
	defer tier.Close()
	p := putters[0]

	putAll(t, tier, p, ids[:6], nil)
	quotas.Set("qa", 4*quotaChunk)
	putAll(t, tier, p, ids[6:7], store.ErrOverQuota)
	if got := tier.BucketBytes("qa"); got != 6*quotaChunk {
		t.Fatalf("BucketBytes(qa) = %d after lowering the quota; want %d (nothing evicted)", got, 6*quotaChunk)
	}
	for _, id := range ids[:3] {
		if err := tier.DeleteObject(id.Bucket, id.Key); err != nil {
			t.Fatal(err)
		}
	}
	putAll(t, tier, p, ids[6:7], nil) // 4 chunks: at the quota
	putAll(t, tier, p, ids[7:8], store.ErrOverQuota)
	quotas.Set("qa", 5*quotaChunk)
	putAll(t, tier, p, ids[7:8], nil)
	putAll(t, tier, p, ids[8:9], store.ErrOverQuota)
	quotas.Set("qa", -1)
	putAll(t, tier, p, ids[8:10], nil)
	quotas.Set("qa", 0)
	putAll(t, tier, p, ids[10:], nil)
	if got := tier.BucketBytes("qa"); got != 9*quotaChunk {
		t.Fatalf("BucketBytes(qa) = %d; want %d", got, 9*quotaChunk)
	}
	checkBucketBytes(t, tier)

	calls := quotas.Calls()
	present(t, tier, ids)
	if n := quotas.Calls(); n != calls {
		t.Fatalf("Get asked Quotas %d times", n-calls)
	}
	putAll(t, tier, putters[1], quotaIDs("qb", 3), nil)
	if n := quotas.Calls() - calls; n != 3 {
		t.Fatalf("3 Puts asked Quotas %d times; want 3", n)
	}
}

// TestConcurrentQuotas: goroutines Put, PutAlways, Get and delete chunks
// of four buckets (two with quotas) in a tier small enough to evict all
// the time, while an observer checks that no capped bucket ever reads over
// its quota. At the end every count equals the bytes the tier holds.
func TestConcurrentQuotas(t *testing.T) {
	for _, pol := range []string{PolicyLRU, PolicyTinyLFU} {
		t.Run(pol, func(t *testing.T) { testConcurrentQuotas(t, pol) })
	}
}

func testConcurrentQuotas(t *testing.T, pol string) {
	buckets := []string{"q0", "q1", "q2", "q3"}
	caps := map[string]int64{"q0": 8 * quotaChunk, "q1": 30 * quotaChunk}
	quotas := storetest.NewQuotas()
	for b, n := range caps {
		quotas.Set(b, n)
	}
	var ids []store.ChunkID
	for _, b := range buckets {
		ids = append(ids, quotaIDs(b, 60)...)
	}
	cost := charge(ids[0], pinData(ids[0]))
	tier := New(Options{Capacity: 64 * cost, Policy: pol, Quotas: quotas})
	defer tier.Close()

	var over atomic.Int64
	stop := make(chan struct{})
	observed := make(chan struct{})
	go func() { // observer: bounded by stop, closed below
		defer close(observed)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for b, n := range caps {
				if tier.BucketBytes(b) > n {
					over.Add(1)
				}
			}
		}
	}()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() { quotaWorker(t, tier, ids, uint64(w)) })
	}
	wg.Wait()
	close(stop)
	<-observed
	if n := over.Load(); n > 0 {
		t.Fatalf("a capped bucket read over its quota %d times", n)
	}
	got := checkBucketBytes(t, tier)
	checkTier(t, tier)
	for b, n := range caps {
		if got[b] > n {
			t.Fatalf("%s holds %d bytes, over its quota %d", b, got[b], n)
		}
	}
	if s := tier.Stats(); s.Evictions == 0 {
		t.Fatalf("no evictions (%+v): the test did not exercise them", s)
	}
}

// quotaWorker runs a fixed number of random operations on ids.
func quotaWorker(t *testing.T, tier *Tier, ids []store.ChunkID, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 42))
	for range 3000 {
		id := ids[r.IntN(len(ids))]
		var err error
		switch op := r.IntN(10); {
		case op < 4:
			_, err = tier.Get(id)
			if errors.Is(err, store.ErrNotFound) {
				err = nil
			}
		case op < 6:
			err = tier.Put(id, pinData(id))
		case op < 9:
			err = tier.PutAlways(id, pinData(id))
		default:
			err = tier.DeleteObject(id.Bucket, id.Key)
		}
		if err != nil && !errors.Is(err, store.ErrOverQuota) && !errors.Is(err, store.ErrNotAdmitted) {
			t.Errorf("%v: %v", id, err)
			return
		}
	}
}
