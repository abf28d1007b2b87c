// Package pins holds the bucket prefixes whose cached data is never
// evicted. Pins come from the configuration (fixed for the node's life)
// and from the admin API (kept in a small file, so they survive
// restarts). The tiers consult the set (store.PinSet) when they choose
// what to evict.
package pins

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

// The errors of Remove (the contract's).
var (
	ErrConfigured = store.ErrPinConfigured
	ErrNoSuchPin  = store.ErrNoSuchPin
)

// Pin is one pinned prefix (the contract's value type).
type Pin = store.Pin

// Set is a store.Pins. It is safe for concurrent use; Pinned is a
// read-locked scan of the bucket's few prefixes.
type Set struct {
	path string // file of the API's pins; "" keeps them in memory only
	gen  atomic.Uint64

	mu    sync.RWMutex // guards fixed, added and writes of path
	fixed map[string][]string
	added map[string][]string
}

var _ store.Pins = (*Set)(nil)

// Open returns the pins of the configuration (bucket -> prefixes) and
// those the admin API added earlier, kept in the file at path.
func Open(fixed map[string][]string, path string) (*Set, error) {
	p := &Set{path: path, fixed: map[string][]string{}, added: map[string][]string{}}
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

// Pinned reports whether bucket/key lies under a pinned prefix.
func (p *Set) Pinned(bucket, key string) bool {
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
func (p *Set) Generation() uint64 { return p.gen.Load() }

// Add pins bucket/prefix (idempotent) and saves the API's pins.
func (p *Set) Add(bucket, prefix string) error {
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

// Remove unpins bucket/prefix: ErrConfigured for a configured pin,
// ErrNoSuchPin if there is none.
func (p *Set) Remove(bucket, prefix string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if slices.Contains(p.fixed[bucket], prefix) {
		return ErrConfigured
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
func (p *Set) List() []Pin {
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

func (p *Set) addedLocked() []Pin {
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
func (p *Set) saveLocked() error {
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
