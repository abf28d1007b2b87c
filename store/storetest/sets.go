// Test doubles of the sets tiers consult: a PinSet of "bucket/key"
// prefixes and a Quotas map, both counting the calls made to them.
package storetest

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/granary-dev/granary/store"
)

// Pins is a store.PinSet: an object is pinned if "bucket/key" starts with
// one of its prefixes.
type Pins struct {
	mu       sync.Mutex
	prefixes map[string]bool // guarded by mu
	gen      atomic.Uint64
	calls    atomic.Int64 // Pinned calls
}

var _ store.PinSet = (*Pins)(nil)

// NewPins returns a set pinning prefixes.
func NewPins(prefixes ...string) *Pins {
	p := &Pins{prefixes: make(map[string]bool)}
	for _, pre := range prefixes {
		p.prefixes[pre] = true
	}
	return p
}

// Pinned reports whether bucket/key is under a pinned prefix.
func (p *Pins) Pinned(bucket, key string) bool {
	p.calls.Add(1)
	name := bucket + "/" + key
	p.mu.Lock()
	defer p.mu.Unlock()
	for pre := range p.prefixes {
		if strings.HasPrefix(name, pre) {
			return true
		}
	}
	return false
}

// Generation moves with every Set.
func (p *Pins) Generation() uint64 { return p.gen.Load() }

// Set pins or unpins prefix.
func (p *Pins) Set(prefix string, pinned bool) {
	p.mu.Lock()
	if pinned {
		p.prefixes[prefix] = true
	} else {
		delete(p.prefixes, prefix)
	}
	p.mu.Unlock()
	p.gen.Add(1)
}

// Calls returns how many times Pinned was called.
func (p *Pins) Calls() int64 { return p.calls.Load() }

// Quotas is a store.Quotas over a map of bucket quotas.
type Quotas struct {
	mu    sync.Mutex
	q     map[string]int64 // guarded by mu
	calls atomic.Int64     // Quota calls
}

var _ store.Quotas = (*Quotas)(nil)

// NewQuotas returns a set without quotas.
func NewQuotas() *Quotas { return &Quotas{q: make(map[string]int64)} }

// Quota returns bucket's quota (0: none).
func (q *Quotas) Quota(bucket string) int64 {
	q.calls.Add(1)
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.q[bucket]
}

// Set sets bucket's quota (0 removes it).
func (q *Quotas) Set(bucket string, n int64) {
	q.mu.Lock()
	q.q[bucket] = n
	q.mu.Unlock()
}

// Calls returns how many times Quota was called.
func (q *Quotas) Calls() int64 { return q.calls.Load() }
