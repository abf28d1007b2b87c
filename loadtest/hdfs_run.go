// The hdfs-epochs scenario's run: seed the data set straight into HDFS,
// read the direct epochs with the HDFS client through the proxies, then
// the gateway's epochs over S3 through a fresh granary node whose origin
// is the namenode proxy.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	hdfsclient "github.com/colinmarc/hdfs/v2"
)

// runHDFSEpochs measures the scenario; with o.granary empty, only the
// direct rows. A failure after some rows were measured logs the partial
// report.
func runHDFSEpochs(ctx context.Context, o options, logw io.Writer) (*hdfsReport, error) {
	p := fullHDFSPlan()
	if o.quick {
		p = quickHDFSPlan()
	}
	slow := epochsLink(o)
	logf := func(format string, args ...any) { fmt.Fprintf(logw, "loadtest: hdfs-epochs: "+format+"\n", args...) }
	c, err := startHDFSCluster(ctx, slow)
	if err != nil {
		return nil, err
	}
	defer c.close()
	logf("hdfsd: namenode %s (proxy %s), datanode %s (proxy %s, advertised)", c.proc.nn, c.nnProxy.Addr(), c.proc.dn, c.dnProxy.Addr())
	rep := &hdfsReport{plan: p, epochsReport: &epochsReport{plan: p.epochsPlan, slow: slow, quick: o.quick, started: time.Now()}}
	r := &epochsRun{plan: p.epochsPlan, objs: newEpochsObjects(p.epochsPlan), bin: o.granary, logf: logf, rep: rep.epochsReport}
	if err := seedHDFS(ctx, c, r.objs, p.seedWorkers, logf); err != nil {
		return nil, err
	}
	err = measureLogged(&rep.loadStart, &rep.loadEnd, func() error { return measureHDFS(ctx, c, r, p) },
		func() bool { return len(rep.rows) > 0 }, rep.markdown, logf)
	if err != nil {
		return nil, fmt.Errorf("%w\nhdfsd log tail:\n%s", err, c.proc.logTail())
	}
	return rep, nil
}

// measureHDFS runs the direct epochs, then (with a binary) the gateway's.
func measureHDFS(ctx context.Context, c *hdfsCluster, r *epochsRun, p hdfsPlan) error {
	if err := directHDFS(ctx, c, r, p.directEpochs); err != nil {
		return err
	}
	if r.bin == "" {
		return nil
	}
	ram, disk := p.fitBudget()
	g, err := startGranary(r.bin, "unused", "", "", ram, disk,
		"--origin", "hdfs://"+c.nnProxy.Addr()+hdfsBase, "--hdfs-user", hdfsUser, "--freshness", "immutable")
	if err != nil {
		return fmt.Errorf("%s: %w", cfgHDFSGateway, err)
	}
	defer g.stop()
	if err := r.gatewayEpochs(ctx, gwConfig{name: cfgHDFSGateway, ram: ram, disk: disk, epochs: p.epochs}, g); err != nil {
		return fmt.Errorf("%s: %w\ngranary log tail:\n%s", cfgHDFSGateway, err, g.tail())
	}
	return nil
}

// directHDFS reads epochs epochs with the v2 client through the proxies,
// in the same orders as the gateway's epochs (readRandom's seed 1000+e,
// as epochsRun.epoch uses).
func directHDFS(ctx context.Context, c *hdfsCluster, r *epochsRun, epochs int) error {
	pool, err := newHDFSClientPool(c, r.plan.workers)
	if err != nil {
		return err
	}
	defer pool.close()
	for e := 1; e <= epochs; e++ {
		elapsed, n, err := readRandom(ctx, r.objs, r.plan.workers, uint64(1000+e), pool.open)
		if err == nil && n != len(r.objs) {
			err = fmt.Errorf("verified %d samples of %d", n, len(r.objs))
		}
		if err != nil {
			return fmt.Errorf("direct epoch %d: %w", e, err)
		}
		r.add(epochRow{config: cfgDirect, epoch: strconv.Itoa(e), files: n, elapsed: elapsed})
	}
	return nil
}

// seedHDFS writes objs into HDFS straight to the cluster (no proxies),
// with workers writers, each with its own client.
func seedHDFS(ctx context.Context, c *hdfsCluster, objs []object, workers int, logf func(string, ...any)) error {
	t0 := time.Now()
	cl, err := c.client(false)
	if err != nil {
		return err
	}
	err = cl.MkdirAll(hdfsBase+"/"+epochsBucket+"/"+epochsPrefix, 0o755)
	cl.Close()
	if err != nil {
		return err
	}
	var next atomic.Int64
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := c.client(false)
			if err != nil {
				errs[w] = err
				return
			}
			defer cl.Close()
			for i := next.Add(1) - 1; i < int64(len(objs)) && ctx.Err() == nil; i = next.Add(1) - 1 {
				if errs[w] = writeHDFSFile(cl, hdfsPath(objs[i]), objs[i].data); errs[w] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(append(errs, ctx.Err())...); err != nil {
		return fmt.Errorf("seed HDFS: %w", err)
	}
	logf("seeded %d files into HDFS in %v", len(objs), time.Since(t0).Round(time.Millisecond))
	return nil
}

// writeHDFSFile creates name with data. Close fails with ErrReplicating
// while the datanode finalizes the last block; it is retried, bounded.
func writeHDFSFile(cl *hdfsclient.Client, name string, data []byte) error {
	w, err := cl.Create(name)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		w.Close()
		return fmt.Errorf("%s: %w", name, err)
	}
	for try := 0; ; try++ {
		err = w.Close()
		if !errors.Is(err, hdfsclient.ErrReplicating) || try >= 100 {
			break
		}
		time.Sleep(20 * time.Millisecond) // the namenode has not seen the block complete yet
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
