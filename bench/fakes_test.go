// Fakes for the bench tests: a clock that moves only when told and an
// in-memory Store whose reads can cost fake time.
package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"time"
)

// fakeClock's time moves only by Sleep and advance; mu guards t.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Sleep(_ context.Context, d time.Duration) (time.Duration, error) {
	c.advance(d)
	return d, nil
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// memStore keeps objects in memory; each Read advances clk by lat. mu
// guards objs and reads.
type memStore struct {
	clk   *fakeClock
	lat   time.Duration
	mu    sync.Mutex
	objs  map[string][]byte
	reads map[string]int
}

func newMemStore(clk *fakeClock, lat time.Duration) *memStore {
	return &memStore{clk: clk, lat: lat, objs: map[string][]byte{}, reads: map[string]int{}}
}

func (s *memStore) Put(_ context.Context, key string, r io.Reader, size int64) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if int64(len(b)) != size {
		return fmt.Errorf("put %s: %d bytes, said %d", key, len(b), size)
	}
	s.mu.Lock()
	s.objs[key] = b
	s.mu.Unlock()
	return nil
}

func (s *memStore) Read(_ context.Context, key string, off, n int64, whole bool) (int64, error) {
	s.mu.Lock()
	b, ok := s.objs[key]
	s.reads[key]++
	s.mu.Unlock()
	if !ok {
		return 0, fmt.Errorf("read %s: no such key", key)
	}
	if whole && (off != 0 || n != int64(len(b))) || off+n > int64(len(b)) {
		return 0, fmt.Errorf("read %s [%d,+%d) whole=%v: object is %d bytes", key, off, n, whole, len(b))
	}
	if s.clk != nil {
		s.clk.advance(s.lat)
	}
	return n, nil
}

func (s *memStore) Fetch(_ context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.objs[key]
	if !ok {
		return nil, fmt.Errorf("fetch %s: no such key", key)
	}
	return bytes.Clone(b), nil
}

// totalReads is how many reads the store answered.
func (s *memStore) totalReads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.reads {
		n += r
	}
	return n
}
