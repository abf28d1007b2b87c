// The checkpoint scenario: a multi-GiB checkpoint saved and restored
// through an emulated remote object store (MinIO behind the slow proxy),
// directly and through granary with a write-through and a write-back
// bucket, then restored again through a fresh granary node with an empty
// cache.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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
	"github.com/granary-dev/granary/internal/slowproxy"
)

// The buckets of the scenario, all on MinIO; granary serves the last two.
const (
	bucketDirect = "ckpt-direct"
	bucketWT     = "ckpt-write-through"
	bucketWB     = "ckpt-write-back"
	ckptPrefix   = "run-1/step-1000"
)

// ckptRun is one checkpoint scenario in progress.
type ckptRun struct {
	ck    *checkpointFile
	proxy *slowproxy.Proxy
	rep   *ckptReport
	logf  func(string, ...any)
}

// runCheckpoint measures the scenario; with o.granary empty, only the
// direct rows.
func runCheckpoint(ctx context.Context, o options, logw io.Writer) (*ckptReport, error) {
	p := fullCkptPlan()
	if o.quick {
		p = quickCkptPlan()
	}
	if o.shardSize > 0 {
		p.shardSize = o.shardSize
	}
	logf := func(format string, args ...any) { fmt.Fprintf(logw, "loadtest: checkpoint: "+format+"\n", args...) }
	if o.granary != "" {
		if err := checkpointSupport(o.granary); err != nil {
			return nil, err
		}
	}
	mio, err := miniotest.Start()
	if err != nil {
		return nil, err
	}
	defer mio.Stop()
	if err := makeBuckets(ctx, mio, bucketDirect, bucketWT, bucketWB); err != nil {
		return nil, err
	}
	proxy, err := slowproxy.Start(mio.Endpoint, o.slow)
	if err != nil {
		return nil, err
	}
	defer proxy.Close()
	dir, err := os.MkdirTemp("", "granary-checkpoint-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	t0 := time.Now()
	ck, err := newCheckpointFile(dir, p)
	if err != nil {
		return nil, err
	}
	defer ck.close()
	logf("wrote %d x %s of random bytes in %v", p.shards, sizeName(p.shardSize), time.Since(t0).Round(time.Millisecond))
	r := &ckptRun{ck: ck, proxy: proxy, logf: logf,
		rep: &ckptReport{plan: p, slow: o.slow, quick: o.quick, started: time.Now(), loadStart: loadAverage()}}
	direct, err := newCkptClient(proxy.Addr(), mio.AccessKey, mio.SecretKey)
	if err != nil {
		return nil, err
	}
	if _, err := r.save(ctx, direct, "save", targetDirect, bucketDirect); err != nil {
		return nil, err
	}
	if err := r.restore(ctx, direct, targetDirect, bucketDirect); err != nil {
		return nil, err
	}
	if err := r.restoreOne(ctx, direct, targetDirect, bucketDirect); err != nil {
		return nil, err
	}
	if o.granary != "" {
		if err := r.granary(ctx, o, mio, dir); err != nil {
			return nil, err
		}
	}
	r.rep.loadEnd = loadAverage()
	return r.rep, nil
}

// checkpointSupport tells whether bin has what the scenario needs: write
// modes on serve and the flush command.
func checkpointSupport(bin string) error {
	out, err := exec.Command(bin, "serve", "--help").CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--write-mode")) {
		return fmt.Errorf("%s serve has no --write-mode: the checkpoint scenario needs write-through and write-back buckets", bin)
	}
	if out, err := exec.Command(bin, "flush", "--help").CombinedOutput(); err != nil {
		return fmt.Errorf("%s has no flush command: %v\n%s", bin, err, out)
	}
	return nil
}

func makeBuckets(ctx context.Context, mio *miniotest.Server, names ...string) error {
	cl, err := newCkptClient(mio.Endpoint, mio.AccessKey, mio.SecretKey)
	if err != nil {
		return err
	}
	for _, b := range names {
		if err := cl.MakeBucket(ctx, b, minio.MakeBucketOptions{}); err != nil {
			return fmt.Errorf("make bucket %s: %w", b, err)
		}
	}
	return nil
}

// save saves the checkpoint to bucket as one row and returns when it
// started. The row's origin bytes are those the proxy carried meanwhile.
func (r *ckptRun) save(ctx context.Context, cl *minio.Client, op, target, bucket string) (time.Time, error) {
	up0, _ := r.proxy.Forwarded()
	start := time.Now()
	d, err := saveCheckpoint(ctx, cl, bucket, ckptPrefix, r.ck)
	if err != nil {
		return start, err
	}
	up1, _ := r.proxy.Forwarded()
	r.add(ckptRow{op: op, target: target, bytes: r.ck.plan.total(), elapsed: d, originBytes: up1 - up0})
	return start, nil
}

// restore restores the checkpoint from bucket as one row.
func (r *ckptRun) restore(ctx context.Context, cl *minio.Client, target, bucket string) error {
	_, down0 := r.proxy.Forwarded()
	d, err := restoreCheckpoint(ctx, cl, bucket, ckptPrefix, r.ck)
	if err != nil {
		return err
	}
	_, down1 := r.proxy.Forwarded()
	r.add(ckptRow{op: "restore", target: target, bytes: r.ck.plan.total(), elapsed: d, originBytes: down1 - down0})
	return nil
}

// restoreOne restores the first shard alone, as one stream: a reader that
// cannot spread over several connections itself.
func (r *ckptRun) restoreOne(ctx context.Context, cl *minio.Client, target, bucket string) error {
	_, down0 := r.proxy.Forwarded()
	d, err := restoreShards(ctx, cl, bucket, ckptPrefix, r.ck, 1)
	if err != nil {
		return err
	}
	_, down1 := r.proxy.Forwarded()
	r.add(ckptRow{op: opRestoreOne, target: target, bytes: r.ck.plan.shardSize, elapsed: d, originBytes: down1 - down0})
	return nil
}

func (r *ckptRun) add(row ckptRow) {
	r.logf("%-7s %-32s %7.2f s %7.0f MB/s  origin %s", row.op, row.target, row.elapsed.Seconds(), row.mbPerSec(), mib(row.originBytes))
	r.rep.rows = append(r.rep.rows, row)
}

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
	// The dirty limit leaves room for the whole checkpoint, so the
	// write-back save is not held back by the upload behind it.
	args := []string{"--config", cfg, "--write-mode", "write-through", "--dirty-limit", strconv.FormatInt(2*r.ck.plan.total(), 10)}
	start := func() (*granaryProc, *minio.Client, error) {
		g, err := startGranary(o.granary, r.proxy.Addr(), mio.AccessKey, mio.SecretKey, ram, disk, args...)
		if err != nil {
			return nil, nil, err
		}
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

// warm saves to each granary bucket and restores it from the cache (a
// write-back save is timed until acknowledged, and until flush reports it
// at the origin). Each step starts once the node's background cache fill
// of the last save is done, as with checkpoints minutes apart; how long
// the fill ran after the acknowledgement is reported.
func (r *ckptRun) warm(ctx context.Context, bin string, g *granaryProc, cl *minio.Client) error {
	if _, err := r.save(ctx, cl, "save", targetWT, bucketWT); err != nil {
		return err
	}
	if err := r.settle(ctx, g, targetWT); err != nil {
		return err
	}
	if err := r.restore(ctx, cl, targetWTCache, bucketWT); err != nil {
		return err
	}
	up0, _ := r.proxy.Forwarded()
	start, err := r.save(ctx, cl, "save", targetWBAck, bucketWB)
	if err != nil {
		return err
	}
	if err := flushPrefix(ctx, bin, g, bucketWB, ckptPrefix+"/"); err != nil {
		return err
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

// settle waits for the node's cache fill after a save and notes its time.
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
