// `bench ckpt`: each of N ranks saves its shard of a named model's
// checkpoint (multipart), and the moment the save returns every rank
// restores its shard, as a job resuming on the same storage would.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	"golang.org/x/sync/errgroup"
)

// CkptOptions shape a checkpoint run. Zero values: Ranks the model's
// (MLPerf's process count), Bytes the model's checkpoint times Scale,
// Scale 0.01 (llama3-8b: 1.05 GB), Clock the wall clock.
type CkptOptions struct {
	Model CheckpointModel
	Bytes int64 // the whole checkpoint, over all ranks
	Scale float64
	Ranks int
	Clock Clock
}

func (o CkptOptions) normalise() (CkptOptions, error) {
	if o.Model.Name == "" {
		return o, errors.New("ckpt: no model")
	}
	if o.Scale == 0 {
		o.Scale = 0.01
	}
	if o.Ranks == 0 {
		o.Ranks = o.Model.Ranks
	}
	if o.Bytes == 0 {
		o.Bytes = int64(math.Round(float64(o.Model.Bytes) * o.Scale))
	}
	if o.Clock == nil {
		o.Clock = RealClock{}
	}
	if o.Ranks < 1 || o.Bytes < int64(o.Ranks) || o.Scale < 0 {
		return o, fmt.Errorf("ckpt: %d bytes over %d ranks: want at least one rank and a byte each", o.Bytes, o.Ranks)
	}
	return o, nil
}

// CkptResult is one save and restore.
type CkptResult struct {
	Model          string  `json:"model"`
	Ranks          int     `json:"ranks"`
	Bytes          int64   `json:"bytes"`
	ShardBytes     int64   `json:"shard_bytes"` // rank 0's; the last rank takes the remainder
	SaveSeconds    float64 `json:"save_seconds"`
	SaveGBps       float64 `json:"save_gb_per_s"` // 10^9 bytes
	RestoreSeconds float64 `json:"restore_seconds"`
	RestoreGBps    float64 `json:"restore_gb_per_s"`
}

// shardKey names rank r's shard under prefix.
func shardKey(prefix, model string, r int) string {
	return fmt.Sprintf("%sckpt/%s/rank-%05d.pt", Prefix(prefix), model, r)
}

// Ckpt saves then restores the checkpoint o describes under prefix. c,
// if not nil, counts the shards and bytes moved.
func Ckpt(ctx context.Context, st Store, prefix string, o CkptOptions, c *Counters) (CkptResult, error) {
	o, err := o.normalise()
	if err != nil {
		return CkptResult{}, err
	}
	if c == nil {
		c = new(Counters)
	}
	shard := o.Bytes / int64(o.Ranks)
	size := func(r int) int64 {
		if r == o.Ranks-1 {
			return o.Bytes - shard*int64(o.Ranks-1)
		}
		return shard
	}
	allRanks := func(do func(ctx context.Context, r int) error) (float64, error) {
		t0 := o.Clock.Now()
		g, gctx := errgroup.WithContext(ctx)
		for r := range o.Ranks {
			g.Go(func() error { return do(gctx, r) })
		}
		err := g.Wait()
		return o.Clock.Now().Sub(t0).Seconds(), err
	}
	res := CkptResult{Model: o.Model.Name, Ranks: o.Ranks, Bytes: o.Bytes, ShardBytes: shard}
	res.SaveSeconds, err = allRanks(func(ctx context.Context, r int) error {
		var src io.Reader = newFillReader(int64(r), size(r))
		if err := st.Put(ctx, shardKey(prefix, o.Model.Name, r), src, size(r)); err != nil {
			return err
		}
		c.Objects.Add(1)
		c.Bytes.Add(size(r))
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("ckpt save: %w", err)
	}
	res.RestoreSeconds, err = allRanks(func(ctx context.Context, r int) error {
		n, err := st.Read(ctx, shardKey(prefix, o.Model.Name, r), 0, size(r), true)
		c.Bytes.Add(n)
		if err == nil {
			c.Objects.Add(1)
		}
		return err
	})
	if err != nil {
		return res, fmt.Errorf("ckpt restore: %w", err)
	}
	res.SaveGBps = gbps(o.Bytes, res.SaveSeconds)
	res.RestoreGBps = gbps(o.Bytes, res.RestoreSeconds)
	return res, nil
}

func gbps(n int64, s float64) float64 {
	if s <= 0 {
		return 0
	}
	return float64(n) / s / 1e9
}

// WriteSummary prints the result for people.
func (r CkptResult) WriteSummary(w io.Writer) {
	fmt.Fprintf(w, "checkpoint %s: %.2f GB over %d ranks (%.1f MB each)\n", r.Model, float64(r.Bytes)/1e9, r.Ranks, float64(r.ShardBytes)/1e6)
	fmt.Fprintf(w, "  save    %.2f GB/s (%.2fs)\n", r.SaveGBps, r.SaveSeconds)
	fmt.Fprintf(w, "  restore %.2f GB/s (%.2fs), started the moment the save returned\n", r.RestoreGBps, r.RestoreSeconds)
}
