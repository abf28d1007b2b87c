// The engine's pin set (a store.Pins), for the admin API.
package gateway

import (
	"errors"

	"github.com/granary-dev/granary/store"
)

// ErrNoPins means the engine was built without a pin set.
var ErrNoPins = errors.New("gateway: pinning is not available")

// Pins returns the engine's pin set, or ErrNoPins.
func (e *Engine) Pins() (store.Pins, error) {
	if e.opts.Pins == nil {
		return nil, ErrNoPins
	}
	return e.opts.Pins, nil
}
