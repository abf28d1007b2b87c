// The metadata of objects written through this node: cached as the origin
// answered the write, so the first read after a save (a restore) needs no
// origin call, unless another write of the same key overlapped it here.
package gateway

import (
	"sync"

	"github.com/granary-dev/granary/store"
)

// writes tracks the writes of each object in flight on this node. mu
// guards m; an entry lives while a write of its key is in flight.
type writes struct {
	mu sync.Mutex
	m  map[string]*writeSet
}

// writeSet is the writes of one key in flight. overlapped is set once
// two were in flight at once: which of them the origin kept last is then
// unknown here, so none may cache its answer.
type writeSet struct {
	n          int
	overlapped bool
}

// begin records a write of key k and returns the func that ends it,
// which reports whether the write had the key to itself throughout. The
// func may be called more than once; only the first call counts.
func (w *writes) begin(k string) func() (alone bool) {
	w.mu.Lock()
	if w.m == nil {
		w.m = map[string]*writeSet{}
	}
	s := w.m[k]
	if s == nil {
		s = &writeSet{}
		w.m[k] = s
	}
	s.n++
	if s.n > 1 {
		s.overlapped = true
	}
	w.mu.Unlock()
	var once sync.Once
	var alone bool
	return func() bool {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			alone = !s.overlapped
			if s.n--; s.n == 0 {
				delete(w.m, k)
			}
		})
		return alone
	}
}

// rememberWrite caches the info of an object just written through this
// node, as the origin answered the write. It runs after the write's
// invalidation, and only for a write that had its key to itself (alone);
// an entry dropped meanwhile by a write through another member stays
// dropped (the sequence check).
func (e *Engine) rememberWrite(info store.ObjectInfo, alone bool) {
	k := metaKey(info.Bucket, info.Key)
	if seq := e.meta.sequence(k); alone && info.ETag != "" && !info.LastModified.IsZero() {
		e.meta.putIf(seq, k, info, e.opts.Now())
	}
}
