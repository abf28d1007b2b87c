// Per-bucket quotas in the RAM tier: the tier counts the chunk bytes it
// holds per bucket (BucketBytes) and refuses a Put that would take a
// bucket past Options.Quotas with store.ErrOverQuota (Granary issue 6).
package ram

import "sync"

// Counting invariant: outside a critical section of the shard holding a
// chunk, bucketBytes.n[b] is the sum of len(e.data) over the entries of
// bucket b in every shard's entries map. Every path that adds or removes
// an entry (put, evictOne, DeleteObject, Close) adjusts the count in the
// same shard-locked section as the map change, so concurrent Puts,
// deletes and evictions never lose an update.
//
// Quota invariant: counts only grow in put, under Tier.mu. The quota check
// runs under Tier.mu too, before anything else in the Put, so no other Put
// can add bytes to the bucket between the check and the insert; deletes
// and evictions running meanwhile only lower the count, which keeps the
// bucket under its quota. Get never looks at quotas or counts.

// bucketBytes is the per-bucket count of chunk data bytes.
//
// Locking: mu guards n. It is a leaf: taken under Tier.mu and/or a shard
// mutex, or under nothing (BucketBytes), never with another lock taken
// after it.
type bucketBytes struct {
	mu sync.Mutex
	n  map[string]int64 // guarded by mu: bytes per bucket; no zero entries
}

// add adds delta (negative on removal) to bucket's count, dropping the
// bucket from the map when it reaches 0, so the map holds only buckets
// the tier has chunks of.
func (b *bucketBytes) add(bucket string, delta int64) {
	if delta == 0 {
		return
	}
	b.mu.Lock()
	if b.n == nil {
		b.n = make(map[string]int64)
	}
	if v := b.n[bucket] + delta; v != 0 {
		b.n[bucket] = v
	} else {
		delete(b.n, bucket)
	}
	b.mu.Unlock()
}

// get returns bucket's count (0 if none).
func (b *bucketBytes) get(bucket string) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n[bucket]
}

// reset forgets every count (the tier dropped every chunk).
func (b *bucketBytes) reset() {
	b.mu.Lock()
	b.n = nil
	b.mu.Unlock()
}

// BucketBytes returns the bytes of chunk data (len of each chunk's data,
// without the per-entry overhead UsedBytes includes) the tier holds for
// bucket; 0 for a bucket it holds nothing of, and after Close. It is a
// map lookup under a small lock, cheap enough for status reports.
func (t *Tier) BucketBytes(bucket string) int64 {
	return t.bytes.get(bucket)
}

// quota returns bucket's quota in bytes, 0 for none (no Quotas, or a
// quota of 0 or less). Put asks it once, before taking Tier.mu, so a slow
// Quotas never holds up other Puts.
func (t *Tier) quota(bucket string) int64 {
	if t.quotas == nil {
		return 0
	}
	return max(t.quotas.Quota(bucket), 0)
}

// overQuota reports whether n more bytes of bucket would take it past
// quota q (as quota returned). Caller holds t.mu (see the quota
// invariant above).
func (t *Tier) overQuota(bucket string, q, n int64) bool {
	return q > 0 && t.bytes.get(bucket)+n > q
}
