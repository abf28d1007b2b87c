// The mount scenario's run: seeds MinIO and the local copy, starts
// granary and the mount, and times every row in a fixed order.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"time"
)

// mountRun is one mount scenario in progress.
type mountRun struct {
	d     *mountData
	local string // the local disk copy
	rep   *mountReport
	logf  func(string, ...any)
}

// runMount measures the scenario with the granary binary of o.
func runMount(ctx context.Context, o options, logw io.Writer) (*mountReport, error) {
	if o.granary == "" {
		return nil, errors.New("the mount scenario needs a granary binary (-granary)")
	}
	if err := mountSupport(o.granary); err != nil {
		return nil, err
	}
	p := fullMountPlan()
	if o.quick {
		p = quickMountPlan()
	}
	logf := func(format string, args ...any) { fmt.Fprintf(logw, "loadtest: mount: "+format+"\n", args...) }
	mio, err := startMinio()
	if err != nil {
		return nil, err
	}
	defer mio.Stop()
	dir, err := mountTempDir("granary-mount-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	r := &mountRun{d: newMountData(p), local: filepath.Join(dir, "local"), logf: logf,
		rep: &mountReport{plan: p, quick: o.quick, started: time.Now()}}
	if err := seedMount(ctx, r.d, mio, dir, logf); err != nil {
		return nil, err
	}
	r.rep.loadStart = loadAverage()
	if err := r.localRows(ctx); err != nil {
		return nil, err
	}
	ram, disk := granaryBudget(o.quick)
	g, err := startGranary(o.granary, mio.Endpoint, mio.AccessKey, mio.SecretKey, ram, disk)
	if err != nil {
		return nil, err
	}
	defer g.stop()
	mnt, logPath, err := mountDirs(dir, "mnt")
	if err != nil {
		return nil, err
	}
	r.rep.mountpoint = mnt
	m, err := startMount(o.granary, g.endpoint(), granaryAccess, granarySecret, mountBucket, mnt, logPath, p.maxMemory, "--read-only")
	if err != nil {
		return nil, err
	}
	defer m.stop()
	if err := r.granaryRows(ctx, g, mnt); err != nil {
		return nil, fmt.Errorf("%w\ngranary log tail:\n%s\ngranary mount log tail:\n%s", err, g.tail(), m.tail())
	}
	if r.rep.peakRSS, err = m.peakRSS(); err != nil {
		return nil, err
	}
	r.rep.unmountErr = m.stop()
	r.rep.unmounted = r.rep.unmountErr == nil
	logf("peak RSS %s; unmounted cleanly: %v", mib(r.rep.peakRSS), r.rep.unmounted)
	if err := r.againRows(ctx, o.granary, g, dir); err != nil {
		return nil, err
	}
	if err := r.saveRow(ctx, o.granary, g, mio, dir); err != nil {
		return nil, err
	}
	if err := r.crashRows(ctx, o.granary, g, dir); err != nil {
		return nil, err
	}
	r.rep.loadEnd = loadAverage()
	return r.rep, nil
}

// mountTempDir makes a temporary directory for mountpoints, named by
// prefix, and returns its path as /proc/self/mountinfo shows it.
func mountTempDir(prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(dir)
}

// againRows mounts the bucket twice more, the node already warm, and
// times the small files: through a read-write mount (which opens every
// file with a round trip), and through a read-only mount whose metadata
// has expired (the kernel asks about every name again).
func (r *mountRun) againRows(ctx context.Context, bin string, g *granaryProc, dir string) error {
	err := r.mountAgain(bin, g, dir, "mnt-rw", nil, func(open func(object) (io.ReadCloser, error)) error {
		if err := r.small(ctx, targetRWFirst, open); err != nil {
			return err
		}
		return r.small(ctx, targetRWWarm, open)
	})
	if err != nil {
		return err
	}
	ttl := time.Second
	flags := []string{"--read-only", "--metadata-ttl", ttl.String()}
	return r.mountAgain(bin, g, dir, "mnt-expired", flags, func(open func(object) (io.ReadCloser, error)) error {
		if _, _, err := readRandom(ctx, r.d.small, r.rep.plan.readers, 3, open); err != nil {
			return err
		}
		time.Sleep(ttl + ttl/2)
		return r.small(ctx, targetExpiredWarm, open)
	})
}

// mountAgain mounts the bucket at dir/name with flags, lists the small
// files' directory and runs passes on the mount.
func (r *mountRun) mountAgain(bin string, g *granaryProc, dir, name string, flags []string, passes func(open func(object) (io.ReadCloser, error)) error) error {
	mnt, logPath, err := mountDirs(dir, name)
	if err != nil {
		return err
	}
	m, err := startMount(bin, g.endpoint(), granaryAccess, granarySecret, mountBucket, mnt, logPath, r.rep.plan.maxMemory, flags...)
	if err != nil {
		return err
	}
	defer m.stop()
	if err := r.listSmall(mnt); err != nil {
		return err
	}
	if err := passes(openFileUnder(mnt)); err != nil {
		return fmt.Errorf("%w\ngranary mount log tail:\n%s", err, m.tail())
	}
	return m.stop()
}

// localRows times the local disk: the large file cold (after dropping
// the page cache) and warm, then the small files warm (after one
// untimed pass that reads them into the page cache).
func (r *mountRun) localRows(ctx context.Context) error {
	if err := dropPageCache(); err != nil {
		r.logf("cannot drop the page cache (%v): the cold local row is not cold", err)
	} else {
		r.rep.cacheDropped = true
	}
	for _, target := range []string{targetLocalCold, targetLocalWarm} {
		if err := r.seq(target, func() (time.Duration, error) { return readSeqFile(r.local, r.d.large) }); err != nil {
			return err
		}
	}
	open := openFileUnder(r.local)
	if _, _, err := readRandom(ctx, r.d.small, r.rep.plan.readers, 2, open); err != nil {
		return err
	}
	return r.small(ctx, targetLocalWarm, open)
}

// granaryRows times the mount and the gateway. Before each warm row the
// node is left to finish its background cache fills.
func (r *mountRun) granaryRows(ctx context.Context, g *granaryProc, mnt string) error {
	gw, tr, err := newS3Client(g.addr, granaryAccess, granarySecret)
	if err != nil {
		return err
	}
	defer tr.CloseIdleConnections()
	for _, target := range []string{targetMountCold, targetMountWarm} {
		if target == targetMountWarm {
			if _, err := g.awaitIdle(ctx, 5*time.Minute); err != nil {
				return err
			}
		}
		if err := r.seq(target, func() (time.Duration, error) { return readSeqFile(mnt, r.d.large) }); err != nil {
			return err
		}
	}
	err = r.seq(targetGatewayWarm, func() (time.Duration, error) { return readSeqS3(ctx, gw, mountBucket, r.d.large) })
	if err != nil {
		return err
	}
	// A data set lists its files first (a Dataset's index): the
	// listing answers the lookups that follow.
	if err := r.listSmall(mnt); err != nil {
		return err
	}
	open := openFileUnder(mnt)
	if err := r.small(ctx, targetMountCold, open); err != nil {
		return err
	}
	if _, err := g.awaitIdle(ctx, 5*time.Minute); err != nil {
		return err
	}
	if err := r.small(ctx, targetMountWarm, open); err != nil {
		return err
	}
	return r.small(ctx, targetGatewayWarm, openS3(ctx, gw, mountBucket))
}

// warmSeqRuns is how many times a warm sequential row reads the file; the
// row is their median, as one read of a warm 1 GiB file takes a fraction
// of a second and other work on the machine skews a single one.
const warmSeqRuns = 3

// seq times the large file with read: once for a cold row, warmSeqRuns
// times for a warm one.
func (r *mountRun) seq(target string, read func() (time.Duration, error)) error {
	runs := warmSeqRuns
	if target == targetLocalCold || target == targetMountCold {
		runs = 1
	}
	var times []time.Duration
	for range runs {
		d, err := read()
		if err != nil {
			return fmt.Errorf("%s: %w", target, err)
		}
		times = append(times, d)
	}
	slices.Sort(times)
	row := mountRow{kind: kindSeq, target: target, bytes: int64(len(r.d.large.data)), files: 1, verified: 1,
		runs: runs, elapsed: times[runs/2]}
	r.logf("%-10s %-45s %8.0f MB/s", row.kind, target, row.mbPerSec())
	r.rep.rows = append(r.rep.rows, row)
	return nil
}

// listSmall lists the small files' directory through the mount (untimed)
// and checks that it holds them all.
func (r *mountRun) listSmall(mnt string) error {
	ents, err := os.ReadDir(filepath.Join(mnt, path.Dir(r.d.small[0].key)))
	if err != nil {
		return err
	}
	if len(ents) != len(r.d.small) {
		return fmt.Errorf("listing through the mount: %d entries, want %d", len(ents), len(r.d.small))
	}
	return nil
}

// warmSmallRuns is how many passes a warm small-file row makes; the row
// is their median (one pass takes a fraction of a second).
const warmSmallRuns = 3

// small times one pass over the small files with open, or the median of
// warmSmallRuns passes for the targets that stay warm from pass to pass.
func (r *mountRun) small(ctx context.Context, target string, open func(object) (io.ReadCloser, error)) error {
	runs := 1
	if target == targetLocalWarm || target == targetMountWarm || target == targetGatewayWarm || target == targetRWWarm {
		runs = warmSmallRuns
	}
	var times []time.Duration
	verified := len(r.d.small)
	for i := range runs {
		d, v, err := readRandom(ctx, r.d.small, r.rep.plan.readers, uint64(10+i), open)
		if err != nil {
			return fmt.Errorf("%s: %w", target, err)
		}
		times, verified = append(times, d), min(verified, v)
	}
	slices.Sort(times)
	row := mountRow{kind: kindSmall, target: target, bytes: int64(len(r.d.small) * r.rep.plan.fileSize),
		files: len(r.d.small), verified: verified, runs: runs, elapsed: times[runs/2]}
	r.logf("%-10s %-45s %8.0f files/s", row.kind, target, row.filesPerSec())
	r.rep.rows = append(r.rep.rows, row)
	return nil
}
