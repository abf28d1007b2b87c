// Pins: bucket prefixes whose cached data is never evicted. Pins come from
// the configuration (fixed for the node's life) and from the admin API
// (kept in a small file, so they survive restarts). The tiers consult the
// set (store.PinSet) when they choose what to evict.
package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/granary-dev/granary/store"
)

var (
	// ErrPinConfigured means a pin comes from the configuration file and
	// can only be removed there.
	ErrPinConfigured = errors.New("gateway: pin is set in the configuration file")
	// ErrNoSuchPin means there is no such pin to remove.
	ErrNoSuchPin = errors.New("gateway: no such pin")
)

// Pin is one pinned prefix.
type Pin struct {
	Bucket     string `json:"bucket"`
	Prefix     string `json:"prefix"`
	Configured bool   `json:"configured"` // from the configuration file
}

// Pins is a store.PinSet. It is safe for concurrent use; Pinned is a
// read-locked scan of the bucket's few prefixes.
type Pins struct {
	path string // file of the API's pins; "" keeps them in memory only
	gen  atomic.Uint64

	mu    sync.RWMutex // guards fixed, added and writes of path
	fixed map[string][]string
	added map[string][]string
}

var _ store.PinSet = (*Pins)(nil)

// NewPins returns the pins of the configuration (bucket -> prefixes) and
// those the admin API added earlier, kept in the file at path.
func NewPins(fixed map[string][]string, path string) (*Pins, error) {
	p := &Pins{path: path, fixed: map[string][]string{}, added: map[string][]string{}}
	for b, prefixes := range fixed {
		for _, pre := range prefixes {
			p.fixed[b] = appendPrefix(p.fixed[b], pre)
		}
	}
	if path == "" {
		return p, nil
	}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return p, nil
	case err != nil:
		return nil, fmt.Errorf("pins: %w", err)
	}
	var saved []Pin
	if err := json.Unmarshal(data, &saved); err != nil {
		return nil, fmt.Errorf("pins: %s: %w", path, err)
	}
	for _, s := range saved {
		p.added[s.Bucket] = appendPrefix(p.added[s.Bucket], s.Prefix)
	}
	return p, nil
}

func appendPrefix(list []string, prefix string) []string {
	if slices.Contains(list, prefix) {
		return list
	}
	return append(list, prefix)
}

// ErrNoPins means the engine was built without a pin set.
var ErrNoPins = errors.New("gateway: pinning is not available")

// Pins returns the engine's pin set, or ErrNoPins.
func (e *Engine) Pins() (*Pins, error) {
	if e.opts.Pins == nil {
		return nil, ErrNoPins
	}
	return e.opts.Pins, nil
}

// Pinned reports whether bucket/key lies under a pinned prefix.
func (p *Pins) Pinned(bucket, key string) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, list := range [2][]string{p.fixed[bucket], p.added[bucket]} {
		for _, pre := range list {
			if strings.HasPrefix(key, pre) {
				return true
			}
		}
	}
	return false
}

// Generation changes with every pin added or removed.
func (p *Pins) Generation() uint64 { return p.gen.Load() }

// Add pins bucket/prefix (idempotent) and saves the API's pins.
func (p *Pins) Add(bucket, prefix string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if slices.Contains(p.fixed[bucket], prefix) || slices.Contains(p.added[bucket], prefix) {
		return nil
	}
	p.added[bucket] = append(p.added[bucket], prefix)
	if err := p.saveLocked(); err != nil {
		p.added[bucket] = slices.DeleteFunc(p.added[bucket], func(s string) bool { return s == prefix })
		return err
	}
	p.gen.Add(1)
	return nil
}

// Remove unpins bucket/prefix: ErrPinConfigured for a configured pin,
// ErrNoSuchPin if there is none.
func (p *Pins) Remove(bucket, prefix string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if slices.Contains(p.fixed[bucket], prefix) {
		return ErrPinConfigured
	}
	i := slices.Index(p.added[bucket], prefix)
	if i < 0 {
		return ErrNoSuchPin
	}
	old := slices.Clone(p.added[bucket])
	p.added[bucket] = slices.Delete(p.added[bucket], i, i+1)
	if err := p.saveLocked(); err != nil {
		p.added[bucket] = old
		return err
	}
	p.gen.Add(1)
	return nil
}

// List returns every pin, by bucket then prefix.
func (p *Pins) List() []Pin {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var out []Pin
	for b, list := range p.fixed {
		for _, pre := range list {
			out = append(out, Pin{Bucket: b, Prefix: pre, Configured: true})
		}
	}
	out = append(out, p.addedLocked()...)
	slices.SortFunc(out, func(a, b Pin) int { return strings.Compare(a.Bucket+"\x00"+a.Prefix, b.Bucket+"\x00"+b.Prefix) })
	return out
}

func (p *Pins) addedLocked() []Pin {
	var out []Pin
	for b, list := range p.added {
		for _, pre := range list {
			out = append(out, Pin{Bucket: b, Prefix: pre})
		}
	}
	return out
}

// saveLocked writes the API's pins to a temporary file, syncs it and
// renames it over path, so the file is always a whole list.
func (p *Pins) saveLocked() error {
	if p.path == "" {
		return nil
	}
	data, err := json.MarshalIndent(p.addedLocked(), "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p.path), ".pins-*")
	if err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err = tmp.Write(data); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p.path)
	}
	if err != nil {
		return fmt.Errorf("pins: saving %s: %w", p.path, err)
	}
	return nil
}
