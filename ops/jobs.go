// Warm-up jobs: started, watched and cancelled by ID (the admin API and
// the scheduler drive them); each keeps live progress and its outcome.
package ops

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/granary-dev/granary/store"
)

// Warm-up job states.
const (
	WarmRunning   = "running"
	WarmDone      = "done"
	WarmFailed    = "failed"
	WarmCancelled = "cancelled"
)

// maxWarmFailures bounds the failed keys a status names.
const maxWarmFailures = 20

// WarmStatus is a warm-up's progress and outcome.
type WarmStatus struct {
	ID    string   `json:"id"`
	Spec  WarmSpec `json:"spec"`
	State string   `json:"state"`
	// Listing is true until the origin's listing has been read whole.
	Listing bool      `json:"listing"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended,omitzero"`
	// Listed objects and their bytes; Removed: dropped from the catalog
	// (deleted at the origin); Changed: a new version since the last load.
	Listed      int64 `json:"listed"`
	ListedBytes int64 `json:"listedBytes"`
	Changed     int64 `json:"changed"`
	Removed     int64 `json:"removed"`
	// Queued objects to fetch and their bytes; Fetched and FetchedBytes
	// of them are done; Cached were in the tiers already.
	Queued       int64    `json:"queued"`
	QueuedBytes  int64    `json:"queuedBytes"`
	Fetched      int64    `json:"fetched"`
	FetchedBytes int64    `json:"fetchedBytes"`
	Cached       int64    `json:"cached"`
	Failed       int64    `json:"failed"`
	Failures     []string `json:"failures,omitempty"` // the first failed keys, with their errors
	Error        string   `json:"error,omitempty"`
}

// warmState is a job's live status (mirrored live in the metrics); mu
// guards st.
type warmState struct {
	mu     sync.Mutex
	st     WarmStatus
	cancel context.CancelFunc
	m      *metrics
}

func (s *warmState) update(f func(*WarmStatus)) {
	s.mu.Lock()
	f(&s.st)
	s.mu.Unlock()
}

func (s *warmState) listed(c store.CatalogChange) {
	s.update(func(st *WarmStatus) {
		switch c.Kind {
		case store.EntryRemoved:
			st.Removed++
			return
		case store.EntryChanged:
			st.Changed++
		}
		st.Listed++
		st.ListedBytes += c.Entry.Size
	})
	if c.Kind != store.EntryRemoved {
		s.m.objects.WithLabelValues("listed").Inc()
	}
}

func (s *warmState) queued(o store.ObjectInfo) {
	s.update(func(st *WarmStatus) { st.Queued++; st.QueuedBytes += o.Size })
}

func (s *warmState) skipped(o store.ObjectInfo) {
	s.update(func(st *WarmStatus) { st.Cached++ })
	s.m.objects.WithLabelValues("cached").Inc()
}

func (s *warmState) fetched(o store.ObjectInfo, err error) {
	if err != nil {
		s.m.objects.WithLabelValues("failed").Inc()
	} else {
		s.m.objects.WithLabelValues("fetched").Inc()
		s.m.bytes.Add(float64(o.Size))
	}
	s.update(func(st *WarmStatus) {
		if err != nil {
			st.Failed++
			if len(st.Failures) < maxWarmFailures {
				st.Failures = append(st.Failures, err.Error())
			}
			return
		}
		st.Fetched++
		st.FetchedBytes += o.Size
	})
}

// failure is the error of a run whose objects failed, or nil.
func (s *warmState) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.Failed > 0 {
		return fmt.Errorf("%d objects could not be fetched", s.st.Failed)
	}
	return nil
}

func (s *warmState) status() WarmStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	st.Failures = append([]string(nil), s.st.Failures...)
	return st
}

// jobs holds the warm-ups; mu guards m. Finished jobs stay (their
// status is what a client polls for) until maxWarmJobs newer ones.
type jobs struct {
	mu  sync.Mutex
	m   map[string]*warmState
	seq atomic.Int64
}

const maxWarmJobs = 100

// StartWarm checks the bucket (under ctx), starts a warm-up and returns
// its ID at once; the warm-up runs until it ends, is cancelled, or the
// engine closes.
func (o *Ops) StartWarm(ctx context.Context, spec WarmSpec) (string, error) {
	if o.e.Catalog() == nil {
		return "", ErrNoCatalog
	}
	if err := o.e.HeadBucket(ctx, spec.Bucket); err != nil {
		return "", err
	}
	j := &o.jobs
	id := fmt.Sprintf("w%d", j.seq.Add(1))
	ctx, cancel := context.WithCancel(o.ctx)
	s := &warmState{cancel: cancel, m: o.m, st: WarmStatus{ID: id, Spec: spec, State: WarmRunning, Listing: true, Started: time.Now()}}
	j.mu.Lock()
	j.m[id] = s
	j.pruneLocked()
	j.mu.Unlock()
	o.wg.Add(1)
	o.m.running.Inc()
	go func() {
		defer o.wg.Done()
		defer o.m.running.Dec()
		defer cancel()
		err := (&warmRun{e: o.e, spec: spec, st: s}).run(ctx)
		o.finishWarm(s, err)
	}()
	return id, nil
}

// finishWarm records a job's outcome and its figures in the metrics.
func (o *Ops) finishWarm(s *warmState, err error) {
	s.update(func(st *WarmStatus) {
		st.Ended, st.Listing = time.Now(), false
		switch {
		case err == nil:
			st.State = WarmDone
		case errors.Is(err, context.Canceled):
			st.State, st.Error = WarmCancelled, "cancelled"
		default:
			st.State, st.Error = WarmFailed, err.Error()
		}
		o.m.jobs.WithLabelValues(st.State).Inc()
	})
	if err != nil {
		o.log.Warn().Err(err).Str("bucket", s.st.Spec.Bucket).Str("prefix", s.st.Spec.Prefix).Msg("warm-up did not complete")
	}
}

// pruneLocked forgets the oldest finished jobs past maxWarmJobs.
func (j *jobs) pruneLocked() {
	if len(j.m) <= maxWarmJobs {
		return
	}
	var done []*warmState
	for _, s := range j.m {
		if st := s.status(); st.State != WarmRunning {
			done = append(done, s)
		}
	}
	sort.Slice(done, func(a, b int) bool { return done[a].status().Started.Before(done[b].status().Started) })
	for _, s := range done[:max(0, len(j.m)-maxWarmJobs)] {
		delete(j.m, s.status().ID)
	}
}

// WarmStatus returns the status of job id.
func (o *Ops) WarmStatus(id string) (WarmStatus, bool) {
	o.jobs.mu.Lock()
	s := o.jobs.m[id]
	o.jobs.mu.Unlock()
	if s == nil {
		return WarmStatus{}, false
	}
	return s.status(), true
}

// WarmJobs returns every job's status, oldest first.
func (o *Ops) WarmJobs() []WarmStatus {
	o.jobs.mu.Lock()
	out := make([]WarmStatus, 0, len(o.jobs.m))
	for _, s := range o.jobs.m {
		out = append(out, s.status())
	}
	o.jobs.mu.Unlock()
	sort.Slice(out, func(a, b int) bool { return out[a].Started.Before(out[b].Started) })
	return out
}

// CancelWarm cancels job id; false if there is no such job.
func (o *Ops) CancelWarm(id string) bool {
	o.jobs.mu.Lock()
	s := o.jobs.m[id]
	o.jobs.mu.Unlock()
	if s != nil {
		s.cancel()
	}
	return s != nil
}
