// Scheduled warm-ups: per-bucket cron specs in the YAML configuration
// start warm-ups periodically (a training set refreshed daily at the
// origin is re-warmed after the refresh). A warm-up still running when
// its next time comes is not started twice.
package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/ops"
)

// WarmSchedule is one scheduled warm-up of a bucket (YAML, under
// buckets.NAME.warm).
type WarmSchedule struct {
	Prefix       string `yaml:"prefix"`
	Schedule     string `yaml:"schedule"` // cron: "0 3 * * *", "@daily", "@every 6h"
	MetadataOnly bool   `yaml:"metadata-only"`
	Parallel     int    `yaml:"parallel"`
}

// scheduleCheck bounds a scheduled start's check of its bucket.
const scheduleCheck = time.Minute

// warmStarter is the part of the engine the scheduler drives.
type warmStarter interface {
	StartWarm(context.Context, ops.WarmSpec) (string, error)
	WarmStatus(id string) (ops.WarmStatus, bool)
}

// checkSchedules reports the first bad cron spec of c.
func (c Config) checkSchedules() error {
	for name, b := range c.Buckets {
		for i, w := range b.Warm {
			if _, err := cron.ParseStandard(w.Schedule); err != nil {
				return fmt.Errorf("buckets.%s.warm[%d].schedule %q: %w", name, i, w.Schedule, err)
			}
			if w.Parallel < 0 || w.Parallel > 256 {
				return fmt.Errorf("buckets.%s.warm[%d].parallel %d: want 0 (default) to 256", name, i, w.Parallel)
			}
		}
	}
	return nil
}

// startSchedules runs c's scheduled warm-ups on e until the returned stop
// is called.
func startSchedules(c Config, e warmStarter, log zerolog.Logger) (stop func(), err error) {
	cr := cron.New()
	for name, b := range c.Buckets {
		for _, w := range b.Warm {
			spec := ops.WarmSpec{Bucket: name, Prefix: w.Prefix, MetadataOnly: w.MetadataOnly, Parallel: w.Parallel}
			if _, err := cr.AddJob(w.Schedule, &scheduledWarm{e: e, spec: spec, log: log}); err != nil {
				return nil, fmt.Errorf("buckets.%s.warm schedule %q: %w", name, w.Schedule, err)
			}
		}
	}
	cr.Start()
	return func() { <-cr.Stop().Done() }, nil
}

// scheduledWarm starts its warm-up unless the previous one still runs.
type scheduledWarm struct {
	e    warmStarter
	spec ops.WarmSpec
	log  zerolog.Logger

	mu   sync.Mutex // guards last
	last string     // the job started last time
}

func (s *scheduledWarm) Run() {
	s.mu.Lock()
	defer s.mu.Unlock()
	log := s.log.With().Str("bucket", s.spec.Bucket).Str("prefix", s.spec.Prefix).Logger()
	if st, ok := s.e.WarmStatus(s.last); ok && st.State == ops.WarmRunning {
		log.Warn().Str("job", s.last).Msg("scheduled warm-up skipped: the previous one is still running")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), scheduleCheck)
	defer cancel()
	id, err := s.e.StartWarm(ctx, s.spec)
	if err != nil {
		log.Error().Err(err).Msg("scheduled warm-up could not start")
		return
	}
	s.last = id
	log.Info().Str("job", id).Msg("scheduled warm-up started")
}
