// The checkpoint scenario: a multi-GiB checkpoint saved and restored
// through an emulated remote object store (MinIO behind the slow proxy),
// directly, through nginx proxy_cache (checkpoint_nginx.go) and through
// granary with a write-through and a write-back bucket
// (checkpoint_granary.go), then restored again through a fresh granary
// node with an empty cache.
package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/internal/slowproxy"
)

// The buckets of the scenario, all on MinIO; nginx serves bucketNginx
// (public-read), granary the write-through and write-back ones.
const (
	bucketDirect = "ckpt-direct"
	bucketNginx  = "ckpt-nginx"
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
	// cache is the processes of the cache the rows measure (a granary
	// node, nginx's workers); nil: none.
	cache procSet
}

// cacheTime is the time the measured cache's threads have run
// (procRunTime: neither a Go process nor an nginx worker drops its
// threads); 0 without one.
func (r *ckptRun) cacheTime() time.Duration {
	t, err := sumOver(r.cache, procRunTime)
	if err != nil {
		return 0
	}
	return t
}

// runCheckpoint measures the scenario; with o.granary empty, only the
// direct and nginx rows.
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
	mio, err := startMinio()
	if err != nil {
		return nil, err
	}
	defer mio.Stop()
	if err := makeBuckets(ctx, mio, bucketDirect, bucketNginx, bucketWT, bucketWB); err != nil {
		return nil, err
	}
	if err := publicRead(ctx, mio, bucketNginx); err != nil {
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
		rep: &ckptReport{plan: p, slow: o.slow, quick: o.quick, started: time.Now(), loadStart: loadAverage(), held: -1}}
	if err := r.direct(ctx, mio); err != nil {
		return nil, err
	}
	if err := r.nginx(ctx, mio); err != nil {
		return nil, fmt.Errorf("nginx: %w", err)
	}
	if o.granary != "" {
		if err := r.granary(ctx, o, mio, dir); err != nil {
			return nil, err
		}
	}
	r.rep.loadEnd = loadAverage()
	return r.rep, nil
}

// direct saves and restores the checkpoint with MinIO through the slow
// link, then restores one shard alone.
func (r *ckptRun) direct(ctx context.Context, mio *miniotest.Server) error {
	cl, err := newCkptClient(r.proxy.Addr(), mio.AccessKey, mio.SecretKey)
	if err != nil {
		return err
	}
	if _, err := r.save(ctx, cl, "save", targetDirect, bucketDirect); err != nil {
		return err
	}
	if err := r.restore(ctx, cl, targetDirect, bucketDirect); err != nil {
		return err
	}
	return r.restoreOne(ctx, cl, targetDirect, bucketDirect)
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
	c0 := r.cacheTime()
	start := time.Now()
	d, err := saveCheckpoint(ctx, cl, bucket, ckptPrefix, r.ck)
	if err != nil {
		return start, err
	}
	up1, _ := r.proxy.Forwarded()
	r.add(ckptRow{op: op, target: target, bytes: r.ck.plan.total(), elapsed: d, originBytes: up1 - up0, cacheCPU: r.cacheTime() - c0})
	return start, nil
}

// restore restores the checkpoint from bucket as one row.
func (r *ckptRun) restore(ctx context.Context, cl *minio.Client, target, bucket string) error {
	return r.timedRestore("restore", target, r.ck.plan.total(), func() (time.Duration, error) {
		return restoreCheckpoint(ctx, cl, bucket, ckptPrefix, r.ck)
	})
}

// restoreRanged restores the checkpoint from bucket as ranged GETs
// (restoreRanged), as one row.
func (r *ckptRun) restoreRanged(ctx context.Context, cl *minio.Client, target, bucket string) error {
	return r.timedRestore(opRestoreRanged, target, r.ck.plan.total(), func() (time.Duration, error) {
		return restoreRanged(ctx, cl, bucket, ckptPrefix, r.ck)
	})
}

// restoreOne restores the first shard alone, as one stream: a reader that
// cannot spread over several connections itself.
func (r *ckptRun) restoreOne(ctx context.Context, cl *minio.Client, target, bucket string) error {
	return r.timedRestore(opRestoreOne, target, r.ck.plan.shardSize, func() (time.Duration, error) {
		return restoreShards(ctx, cl, bucket, ckptPrefix, r.ck, 1)
	})
}

// timedRestore adds the row of op, which read (n bytes) timed itself:
// with what crossed the slow link and the cache's CPU meanwhile.
func (r *ckptRun) timedRestore(op, target string, n int64, read func() (time.Duration, error)) error {
	_, down0 := r.proxy.Forwarded()
	c0 := r.cacheTime()
	d, err := read()
	if err != nil {
		return err
	}
	_, down1 := r.proxy.Forwarded()
	r.add(ckptRow{op: op, target: target, bytes: n, elapsed: d, originBytes: down1 - down0, cacheCPU: r.cacheTime() - c0})
	return nil
}

func (r *ckptRun) add(row ckptRow) {
	r.logf("%-7s %-32s %7.2f s %7.0f MB/s  origin %s", row.op, row.target, row.elapsed.Seconds(), row.mbPerSec(), mib(row.originBytes))
	r.rep.rows = append(r.rep.rows, row)
}
