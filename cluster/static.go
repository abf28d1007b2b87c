// Static membership: a fixed list of members (--peers), each probed over
// the peer protocol; one that fails a few probes in a row is out of the
// ring until a probe succeeds again.
package cluster

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Defaults of a Static membership's probing.
const (
	DefaultProbeInterval = time.Second
	probeFailures        = 2 // failed probes in a row that make a member dead
)

// Static is a Membership over a fixed list.
type Static struct {
	self     Member
	peers    []Member
	client   Caller
	interval time.Duration
	log      zerolog.Logger
	changes  chan struct{}

	mu     sync.Mutex     // guards failed
	failed map[string]int // peer ID -> probes failed in a row

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

var _ Membership = (*Static)(nil)

// NewStatic starts probing peers (self is skipped if listed) every
// interval (0 means DefaultProbeInterval). Every peer counts as alive
// until it fails probeFailures probes in a row.
func NewStatic(self Member, peers []Member, client Caller, interval time.Duration, log zerolog.Logger) *Static {
	if interval <= 0 {
		interval = DefaultProbeInterval
	}
	s := &Static{self: self, client: client, interval: interval, log: log,
		changes: make(chan struct{}, 1), failed: map[string]int{},
		stop: make(chan struct{}), done: make(chan struct{})}
	for _, p := range peers {
		if p.ID != self.ID {
			s.peers = append(s.peers, p)
		}
	}
	go s.run()
	return s
}

// Members returns self and the peers not dead, sorted by ID.
func (s *Static) Members() []Member {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []Member{s.self}
	for _, p := range s.peers {
		if s.failed[p.ID] < probeFailures {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Known returns every listed member, dead or alive, sorted by ID.
func (s *Static) Known() []Member {
	out := append([]Member{s.self}, s.peers...)
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Changes implements Membership.
func (s *Static) Changes() <-chan struct{} { return s.changes }

// Close stops probing.
func (s *Static) Close() error {
	s.once.Do(func() { close(s.stop) })
	<-s.done
	return nil
}

func (s *Static) run() {
	defer close(s.done)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.probeAll()
		}
	}
}

// probeAll pings every peer at once and records the results.
func (s *Static) probeAll() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	var wg sync.WaitGroup
	for _, p := range s.peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.record(p, s.client.Ping(ctx, p))
		}()
	}
	wg.Wait()
}

// record counts a probe of p, and signals a change when p dies or
// comes back.
func (s *Static) record(p Member, err error) {
	s.mu.Lock()
	was := s.failed[p.ID]
	if err == nil {
		s.failed[p.ID] = 0
	} else {
		s.failed[p.ID] = was + 1
	}
	now := s.failed[p.ID]
	s.mu.Unlock()
	switch {
	case was >= probeFailures && now == 0:
		s.log.Info().Str("peer", p.ID).Msg("peer is back")
	case was < probeFailures && now >= probeFailures:
		s.log.Warn().Err(err).Str("peer", p.ID).Msg("peer is down: out of the ring")
	default:
		return
	}
	select {
	case s.changes <- struct{}{}:
	default:
	}
}
