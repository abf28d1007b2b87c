// Flush: waiting until the writes under a prefix accepted before the call
// are at the origin, with progress reports and an early failure when one
// of them cannot be uploaded.
package writeback

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/granary-dev/granary/store"
)

// FlushStatus is a flush's progress (the contract's value type).
type FlushStatus = store.FlushStatus

// flushCheckGap is the least time between two evaluations of a flush (a
// burst of landings wakes it once per gap, not once per landing).
const flushCheckGap = 20 * time.Millisecond

// Flush waits until every write under bucket/prefix accepted before the
// call is at the origin, calling progress (if set) at least every second.
// It fails when ctx ends, or when an upload under the prefix failed in a
// way retries cannot fix (the entry stays journaled). An empty bucket
// means every bucket.
//
// A write superseded by a newer one of the same key is at the origin when
// the newer one is (it never lands itself).
func (l *Log) Flush(ctx context.Context, bucket, prefix string, progress func(FlushStatus)) error {
	l.mu.Lock()
	limit, clock := l.lastSeq, l.attempts
	var keys []objKey
	for k, ks := range l.keys {
		if (bucket == "" || k.bucket == bucket) && strings.HasPrefix(k.key, prefix) && waitsFor(ks, limit) {
			keys = append(keys, k)
			// A write that failed for good is tried again now, not at
			// the slow pace of such retries: the flush may be the
			// caller telling that the cause is fixed.
			if o := ks.next; o != nil && o.failed != nil {
				o.notBefore = time.Time{}
				l.enqueueLocked(ks)
			}
		}
	}
	l.mu.Unlock()
	total := len(keys)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var st FlushStatus
	for first := true; ; first = false {
		var failure error
		var ch chan struct{}
		keys, ch, failure = l.flushStatus(keys, limit, clock, &st)
		st.Uploaded = total - len(keys)
		if first && failure == nil && len(keys) > 0 {
			report(progress, st) // what there is to wait for
		}
		switch {
		case failure != nil:
			report(progress, st)
			return failure
		case len(keys) == 0:
			report(progress, st)
			return nil
		case ch == nil:
			return errClosed
		}
		select {
		case <-ch:
			// Let a burst of changes settle before looking again.
			select {
			case <-time.After(flushCheckGap):
			case <-ctx.Done():
				return fmt.Errorf("writeback: flush %s/%s: %w", bucket, prefix, ctx.Err())
			}
		case <-tick.C:
			report(progress, st)
		case <-ctx.Done():
			return fmt.Errorf("writeback: flush %s/%s: %w", bucket, prefix, ctx.Err())
		}
	}
}

func report(progress func(FlushStatus), st FlushStatus) {
	if progress != nil {
		progress(st)
	}
}

// waitsFor reports whether ks has an operation standing for a write of
// seq limit or older (mu held).
func waitsFor(ks *keyState, limit uint64) bool {
	return ks.cur != nil && ks.cur.floor <= limit || ks.next != nil && ks.next.floor <= limit
}

// flushStatus updates st with the keys still waiting and returns them,
// the channel that signals the next change (nil once the Log is closed),
// and an error if one of them failed permanently in an attempt finished
// after clock (the flush's start).
func (l *Log) flushStatus(keys []objKey, limit, clock uint64, st *FlushStatus) ([]objKey, chan struct{}, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return keys, nil, nil
	}
	st.Pending, st.PendingBytes = 0, 0
	var failure error
	left := keys[:0]
	for _, k := range keys {
		ks := l.keys[k]
		if ks == nil || !waitsFor(ks, limit) {
			continue // done: it never waits again (newer ops stand for newer writes)
		}
		left = append(left, k)
		st.Pending++
		for _, o := range []*op{ks.cur, ks.next} {
			if o == nil || o.floor > limit {
				continue
			}
			st.PendingBytes += o.Info.Size
			if o.lastErr != nil {
				st.LastError = fmt.Sprintf("%s/%s: %v", k.bucket, k.key, o.lastErr)
			}
			if o.failed != nil && o.failedAt > clock && failure == nil {
				failure = fmt.Errorf("writeback: flush: %s of %s/%s cannot be uploaded: %w", o.Kind, k.bucket, k.key, o.failed)
			}
		}
	}
	return left, l.changed, failure
}
