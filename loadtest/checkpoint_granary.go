// The checkpoint scenario's granary rows: saves to a write-through and a
// write-back bucket, each restored the moment the save returns and again
// once the node's cache fill is done, then cold restores through fresh
// nodes.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/signer"

	"github.com/granary-dev/granary/internal/miniotest"
)

// ckptBudget is the granary node's RAM and disk budget: those of the reads
// scenario, with a disk that holds both granary buckets' copies of the
// checkpoint twice over.
func ckptBudget(p ckptPlan, quick bool) (ram, disk int64) {
	ram, disk = granaryBudget(quick)
	return ram, max(disk, 4*p.total())
}

// granary measures the granary rows: saves to both buckets, restores from
// the cache, then a cold restore through a fresh node.
func (r *ckptRun) granary(ctx context.Context, o options, mio *miniotest.Server, dir string) error {
	cfg := filepath.Join(dir, "granary.yaml")
	yaml := fmt.Sprintf("buckets:\n  %s:\n    write-mode: write-through\n  %s:\n    write-mode: write-back\n", bucketWT, bucketWB)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		return err
	}
	ram, disk := ckptBudget(r.ck.plan, r.rep.quick)
	r.rep.granaryRAM = ram
	defer func() { r.cache = nil }()
	// The dirty limit leaves room for the whole checkpoint, so the
	// write-back save is not held back by the upload behind it.
	args := []string{"--config", cfg, "--write-mode", "write-through", "--dirty-limit", strconv.FormatInt(2*r.ck.plan.total(), 10)}
	start := func() (*granaryProc, *minio.Client, error) {
		g, err := startGranary(o.granary, r.proxy.Addr(), mio.AccessKey, mio.SecretKey, ram, disk, args...)
		if err != nil {
			return nil, nil, err
		}
		r.cache = pidOf(g.cmd.Process.Pid)
		cl, err := newCkptClient(g.addr, granaryAccess, granarySecret)
		if err != nil {
			g.stop()
		}
		return g, cl, err
	}
	g, cl, err := start()
	if err != nil {
		return err
	}
	if err := r.warm(ctx, o.granary, g, cl); err != nil {
		err = fmt.Errorf("%w\ngranary log tail:\n%s", err, g.tail())
		g.stop()
		return err
	}
	rss, err := g.peakRSS()
	g.stop()
	if err != nil {
		return err
	}
	r.rep.rss = append(r.rep.rss, rssNote{"saves and cached restores", rss})
	if g, cl, err = start(); err != nil {
		return err
	}
	defer g.stop()
	if err := r.restore(ctx, cl, targetCold, bucketWT); err != nil {
		return fmt.Errorf("%w\ngranary log tail:\n%s", err, g.tail())
	}
	if rss, err = g.peakRSS(); err != nil {
		return err
	}
	r.rep.rss = append(r.rep.rss, rssNote{"cold restore (fresh node)", rss})
	return r.coldOne(ctx, start)
}

// coldOne restores one shard on another fresh node: one client stream,
// which the node reads from the origin as parallel ranged fetches.
func (r *ckptRun) coldOne(ctx context.Context, start func() (*granaryProc, *minio.Client, error)) error {
	g, cl, err := start()
	if err != nil {
		return err
	}
	defer g.stop()
	if err := r.restoreOne(ctx, cl, targetCold, bucketWT); err != nil {
		return fmt.Errorf("%w\ngranary log tail:\n%s", err, g.tail())
	}
	return nil
}

// warm saves to each granary bucket and restores it twice: the moment
// the save returns (acknowledged, for write-back), as a training job
// restarting after a pre-emption does, then again once the node's
// background cache fill is done, as with checkpoints minutes apart; how
// long the fill ran on after the first restore is reported. The
// write-through bucket is then restored once more in ranged GETs.
func (r *ckptRun) warm(ctx context.Context, bin string, g *granaryProc, cl *minio.Client) error {
	if _, err := r.save(ctx, cl, "save", targetWT, bucketWT); err != nil {
		return err
	}
	if err := r.restore(ctx, cl, targetWTNow, bucketWT); err != nil {
		return err
	}
	if err := r.settle(ctx, g, targetWTNow); err != nil {
		return err
	}
	if err := r.restore(ctx, cl, targetWTCache, bucketWT); err != nil {
		return err
	}
	if err := r.restoreRanged(ctx, cl, targetWTCache, bucketWT); err != nil {
		return err
	}
	return r.writeBack(ctx, bin, g, cl)
}

// writeBack saves to the write-back bucket, timed until acknowledged, and
// restores it at once while `granary flush` waits for the upload (the
// save's persisted row is timed until the flush returns), then restores
// it again once the cache fill is done.
func (r *ckptRun) writeBack(ctx context.Context, bin string, g *granaryProc, cl *minio.Client) error {
	up0, _ := r.proxy.Forwarded()
	start, err := r.save(ctx, cl, "save", targetWBAck, bucketWB)
	if err != nil {
		return err
	}
	flushed := make(chan error, 1)
	go func() { flushed <- flushPrefix(ctx, bin, g, bucketWB, ckptPrefix+"/") }()
	restoreErr := r.restore(ctx, cl, targetWBNow, bucketWB)
	if err := <-flushed; err != nil {
		return err
	}
	// Counted once a wait ends, so after the flush: nothing else read a
	// staged copy meanwhile.
	if m, err := scrapeMetrics(ctx, g.endpoint()); err == nil {
		r.rep.held = time.Duration(m.sum("granary_writeback_held_seconds_total") * float64(time.Second))
		r.logf("write-back uploads held for the restore: %.2f s in all", r.rep.held.Seconds())
	}
	if restoreErr != nil {
		return restoreErr
	}
	up1, _ := r.proxy.Forwarded()
	r.add(ckptRow{op: "save", target: targetWBPersisted, bytes: r.ck.plan.total(), elapsed: time.Since(start), originBytes: up1 - up0})
	if err := r.checkPersisted(ctx, g); err != nil {
		return err
	}
	if err := r.settle(ctx, g, targetWBPersisted); err != nil {
		return err
	}
	return r.restore(ctx, cl, targetWBCache, bucketWB)
}

// settle waits for the node's cache fill after a step and notes its time.
func (r *ckptRun) settle(ctx context.Context, g *granaryProc, after string) error {
	d, err := g.awaitIdle(ctx, 5*time.Minute)
	if err != nil {
		return err
	}
	r.rep.fills = append(r.rep.fills, fillNote{after, d})
	r.logf("cache fill after %s: done %.2f s later", after, d.Seconds())
	return nil
}

// flushPrefix runs `granary flush` on s3://bucket/prefix and returns once
// the node reports every object there at the origin.
func flushPrefix(ctx context.Context, bin string, g *granaryProc, bucket, prefix string) error {
	cmd := exec.CommandContext(ctx, bin, "flush", "--endpoint", g.endpoint(), "s3://"+bucket+"/"+prefix)
	cmd.Env = append(os.Environ(), "GRANARY_ACCESS_KEY="+granaryAccess, "GRANARY_SECRET_KEY="+granarySecret)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("granary flush s3://%s/%s: %v\n%s", bucket, prefix, err, out)
	}
	return nil
}

// checkPersisted HEADs every write-back shard after the flush: each must
// say x-granary-persisted: true.
func (r *ckptRun) checkPersisted(ctx context.Context, g *granaryProc) error {
	var errs []error
	for i := range r.ck.plan.shards {
		key := r.ck.shardKey(ckptPrefix, i)
		req, err := http.NewRequestWithContext(ctx, http.MethodHead, g.endpoint()+"/"+bucketWB+"/"+key, nil)
		if err != nil {
			return err
		}
		req.Header.Set("X-Amz-Content-Sha256", emptySHA256)
		resp, err := http.DefaultClient.Do(signer.SignV4(*req, granaryAccess, granarySecret, "", "us-east-1"))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if v := resp.Header.Get("X-Granary-Persisted"); resp.StatusCode != http.StatusOK || !strings.EqualFold(v, "true") {
			errs = append(errs, fmt.Errorf("HEAD %s/%s after flush: status %d, x-granary-persisted %q", bucketWB, key, resp.StatusCode, v))
		}
	}
	return errors.Join(errs...)
}
