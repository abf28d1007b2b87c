// Request contexts' parents: the server's base context, split so that
// requests do not all register with one.
package api

import (
	"context"
	"math/rand/v2"
)

// parentCount is how many parents requests' contexts are spread over.
const parentCount = 16

// parents are children of the server's base context, each the parent of
// a share of the requests' contexts. A context.WithCancel under a
// cancelable parent records itself with that parent, under the parent's
// lock, and takes itself off again when cancelled: with one parent for
// every request, each GET that made one (every GET once; now a reader of
// an object not whole in memory) took that one lock twice, from every
// core. Cancelling the base cancels every parent, and so every request,
// as before.
type parents struct {
	ctx    [parentCount]context.Context
	cancel [parentCount]context.CancelFunc
}

func newParents(base context.Context) *parents {
	p := &parents{}
	for i := range p.ctx {
		p.ctx[i], p.cancel[i] = context.WithCancel(base)
	}
	return p
}

// pick returns a parent for one request's context.
func (p *parents) pick() context.Context { return p.ctx[rand.Uint32()%parentCount] }

// stop cancels every parent.
func (p *parents) stop() {
	for _, cancel := range p.cancel {
		cancel()
	}
}
