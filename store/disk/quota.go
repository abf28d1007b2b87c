// Per-bucket quotas: the bytes of chunk data each bucket holds in the tier,
// kept per unit so that they follow whole-unit eviction exactly.
//
// Invariants:
//   - unit.buckets (guarded by Tier.mu) holds, per bucket, the lengths of
//     the chunks indexed in the unit that Put counted (noteWritten) minus
//     those dropped from it (deleted or corrupt). It may go negative for a
//     moment when a chunk is dropped between its index insert and its
//     counting; the two then cancel.
//   - Tier.bucketBytes (guarded by Tier.qmu) is the sum of unit.buckets
//     over the live units: every change to a live unit's map is mirrored
//     into it under mu, and detaching a unit subtracts its whole map. A
//     detached unit's map no longer changes the totals.
//   - Tier.pending (guarded by qmu) holds the bytes of Puts that passed a
//     quota check and have not finished; the check counts them, so
//     concurrent Puts of one bucket cannot together pass its quota.
//
// Lock order: mu, then qmu. BucketBytes and the quota check take only
// qmu, so status reports never wait for an eviction walk.
package disk

import (
	"github.com/granary-dev/granary/store"
)

var _ store.BucketSizer = (*Tier)(nil)

// BucketBytes returns the bytes of chunk data the tier holds for bucket.
func (t *Tier) BucketBytes(bucket string) int64 {
	t.qmu.Lock()
	defer t.qmu.Unlock()
	return t.bucketBytes[bucket]
}

// admitQuota checks a Put of n bytes into bucket against its quota (asked
// once) and, if it has one and it passes, reserves the bytes until the
// returned function is called (at the end of the Put). It fails with
// store.ErrOverQuota having changed nothing.
func (t *Tier) admitQuota(bucket string, n int64) (func(), error) {
	if t.opts.Quotas == nil {
		return func() {}, nil
	}
	q := t.opts.Quotas.Quota(bucket)
	if q <= 0 {
		return func() {}, nil
	}
	t.qmu.Lock()
	defer t.qmu.Unlock()
	if t.bucketBytes[bucket]+t.pending[bucket]+n > q {
		return nil, store.ErrOverQuota
	}
	t.pending[bucket] += n
	return func() {
		t.qmu.Lock()
		defer t.qmu.Unlock()
		addTo(t.pending, bucket, -n)
	}, nil
}

// addTo adds d to m[k], deleting the entry when it comes to zero so maps
// do not grow with buckets that come and go.
func addTo(m map[string]int64, k string, d int64) {
	if v := m[k] + d; v != 0 {
		m[k] = v
	} else {
		delete(m, k)
	}
}

// bytesAddedLocked counts n bytes of bucket as indexed in u (n < 0: dropped
// from it). A detached unit no longer counts. Caller holds mu.
func (t *Tier) bytesAddedLocked(u *unit, bucket string, n int64) {
	if u.detached || n == 0 {
		return
	}
	if u.buckets == nil {
		u.buckets = make(map[string]int64, 1)
	}
	addTo(u.buckets, bucket, n)
	t.qmu.Lock()
	addTo(t.bucketBytes, bucket, n)
	t.qmu.Unlock()
}

// bytesDetachedLocked takes a unit being detached out of the per-bucket
// totals. Caller holds mu.
func (t *Tier) bytesDetachedLocked(u *unit) {
	if len(u.buckets) == 0 {
		return
	}
	t.qmu.Lock()
	for b, n := range u.buckets {
		addTo(t.bucketBytes, b, -n)
	}
	t.qmu.Unlock()
}

// loadBucketBytes rebuilds every live unit's per-bucket bytes, and the
// totals, from the index (recover calls it once the units are adopted).
// Entries naming units that are not live are ignored: recover has
// dropped them, or they are stale.
func (t *Tier) loadBucketBytes() error {
	perUnit, err := t.idx.UnitBucketBytes()
	if err != nil {
		return ioErr("sum bucket bytes", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, m := range perUnit {
		if u := t.units[id]; u != nil {
			for b, n := range m {
				t.bytesAddedLocked(u, b, n)
			}
		}
	}
	return nil
}

// resetBucketBytesLocked forgets every count (the unit table is being
// emptied). Caller holds mu.
func (t *Tier) resetBucketBytesLocked() {
	t.qmu.Lock()
	t.bucketBytes = make(map[string]int64)
	t.qmu.Unlock()
}
