// Command loadtest measures a granary binary against MinIO direct, a
// trivial in-memory Go HTTP server and nginx proxy_cache (the reference
// cache, nginx.go), in one run on this machine, and writes a markdown
// report (absolute numbers and ratios).
//
//	go run ./loadtest -granary bin/granary [-quick] [-out FILE] [-scenario reads,checkpoint,mount,epochs,hdfs-epochs,cluster,tls,origin-faults]
//
// Scenario reads (the default) measures GETs of small and large objects;
// scenario checkpoint saves and restores a checkpoint through a slow
// origin (MinIO behind a throttling proxy, see -slow-*); scenario mount
// reads files through `granary mount` against local disk (root, with
// /dev/fuse); scenario epochs reads a data set of small files for several
// epochs through a slow origin, directly, through nginx and through
// granary; scenario
// hdfs-epochs does the same from the test HDFS cluster (hdfsd, built from
// internal/hdfstest/hdfsd) with the HDFS client as the direct reader;
// scenario cluster measures three granary nodes as a cluster in front of
// a slow origin: the cost of the peer hop, and the origin requests the
// cluster saves against three independent nodes; scenario tls measures a
// node serving HTTPS against one serving HTTP (warm small GETs, one large
// stream) in the same run; scenario origin-faults reads a warmed data set
// through one node while its origin is healthy, hung, refusing and back
// (cached GETs/s and p99 per phase, how fast misses fail once the breaker
// is open, the time to recover).
//
// The reads, checkpoint and epochs scenarios measure nginx proxy_cache,
// the reference cache, beside granary: they need nginx, which `make
// bench-deps` installs.
//
// Everything runs on loopback and stops at the end; every loop is bounded
// by its object count and the whole run by -timeout.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/granary-dev/granary/internal/slowproxy"
)

// options are the command line.
type options struct {
	granary   string // binary; "" measures MinIO and the trivial server only
	quick     bool
	out       string
	timeout   time.Duration
	scenarios []string          // "reads", "checkpoint", "mount", "epochs", "hdfs-epochs", "cluster", "tls", "origin-faults", in run order
	slow      slowproxy.Options // the checkpoint scenario's link to its origin
	slowSet   []string          // the -slow-* flags given (epochs, hdfs-epochs and cluster take only these from slow)
	shardSize int64             // checkpoint shard size; 0: by -quick
}

func main() {
	var o options
	var scenarios string
	def := slowproxy.DefaultOptions()
	stream, total := slowproxy.RateFlag(def.Stream), slowproxy.RateFlag(def.Total)
	flag.StringVar(&o.granary, "granary", "", "granary binary to measure (empty: MinIO, the trivial server and nginx only, or the direct and nginx rows of checkpoint and epochs)")
	flag.BoolVar(&o.quick, "quick", false, "small sizes for a smoke run (300 objects per set, 64MiB large object; checkpoint 4 x 32MiB; epochs and hdfs-epochs 2,000 samples; cluster 300 small, 2 x 64MiB large, 200 objects in the origin workload; tls 300 objects per set, 64MiB, one round)")
	flag.StringVar(&o.out, "out", "", "markdown report file (default loadtest/results/latest.md, or checkpoint.md, mount.md, epochs.md, hdfs-epochs.md, cluster.md, tls.md or origin-faults.md when that scenario runs alone; none with -quick)")
	flag.DurationVar(&o.timeout, "timeout", 45*time.Minute, "bound on the whole run")
	flag.StringVar(&scenarios, "scenario", "reads", "comma-separated scenarios to run in order: reads (GETs of small and large objects), checkpoint (save and restore through a slow origin), mount (files through granary mount against local disk), epochs (a data set of small files read for several epochs through a slow origin), hdfs-epochs (the same from the test HDFS cluster behind slow proxies, direct with the HDFS client and through granary), cluster (three granary nodes as a cluster through a slow origin: the peer hop's cost, and origin requests against three independent nodes), tls (a node serving HTTPS against one serving HTTP: warm GETs of 4KiB and 100KiB objects at 64 clients, one 1GiB stream), origin-faults (a warmed set read while the origin is healthy, hung, refusing and back)")
	flag.Var(&stream, "slow-stream", "checkpoint, epochs, hdfs-epochs and cluster: bandwidth of one connection to the origin, each direction (0: unlimited)")
	flag.Var(&total, "slow-total", "checkpoint, epochs, hdfs-epochs and cluster: bandwidth over all connections to the origin, each direction (0: unlimited)")
	flag.DurationVar(&o.slow.Latency, "slow-latency", def.Latency, "checkpoint, epochs, hdfs-epochs and cluster: one-way latency to the origin (defaults of epochs' capped link, hdfs-epochs and cluster, each replaced by its flag when given: 25MB/s per connection, 100MB/s in all, 20ms; epochs' headline link is fixed)")
	var shard slowproxy.RateFlag
	flag.Var(&shard, "checkpoint-shard", "checkpoint: size of each of the 4 shards, e.g. 8MiB (default 512MiB, 32MiB with -quick)")
	flag.Parse()
	o.slow.Stream, o.slow.Total, o.shardSize = float64(stream), float64(total), int64(shard)
	flag.Visit(func(f *flag.Flag) {
		if strings.HasPrefix(f.Name, "slow-") {
			o.slowSet = append(o.slowSet, f.Name)
		}
	})
	var err error
	if o.scenarios, err = parseScenarios(scenarios); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(2)
	}
	if o.out == "" && !o.quick {
		name := "latest.md"
		if len(o.scenarios) == 1 && o.scenarios[0] != "reads" {
			name = o.scenarios[0] + ".md"
		}
		o.out = filepath.Join("loadtest", "results", name)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	md, err := runScenarios(ctx, o, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
	fmt.Print(md)
	if o.out != "" {
		if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err == nil {
			err = os.WriteFile(o.out, []byte(md), 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadtest:", err)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "loadtest: wrote", o.out)
	}
}

// parseScenarios splits and checks the -scenario list.
func parseScenarios(s string) ([]string, error) {
	var out []string
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains([]string{"reads", "checkpoint", "mount", "epochs", "hdfs-epochs", "cluster", "tls", "origin-faults"}, name) {
			return nil, fmt.Errorf("unknown scenario %q: want reads, checkpoint, mount, epochs, hdfs-epochs, cluster, tls or origin-faults", name)
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

// runScenarios runs o.scenarios in order and returns their reports, one
// after the other.
func runScenarios(ctx context.Context, o options, logw io.Writer) (string, error) {
	var md strings.Builder
	for _, s := range o.scenarios {
		if md.Len() > 0 {
			md.WriteString("\n")
		}
		switch s {
		case "reads":
			rep, err := run(ctx, o, logw)
			if err != nil {
				return "", err
			}
			md.WriteString(rep.markdown())
		case "checkpoint":
			rep, err := runCheckpoint(ctx, o, logw)
			if err != nil {
				return "", fmt.Errorf("checkpoint: %w", err)
			}
			md.WriteString(rep.markdown())
		case "mount":
			rep, err := runMount(ctx, o, logw)
			if err != nil {
				return "", fmt.Errorf("mount: %w", err)
			}
			md.WriteString(rep.markdown())
		case "epochs":
			rep, err := runEpochs(ctx, o, logw)
			if err != nil {
				return "", fmt.Errorf("epochs: %w", err)
			}
			md.WriteString(rep.markdown())
		case "hdfs-epochs":
			rep, err := runHDFSEpochs(ctx, o, logw)
			if err != nil {
				return "", fmt.Errorf("hdfs-epochs: %w", err)
			}
			md.WriteString(rep.markdown())
		case "cluster":
			rep, err := runCluster(ctx, o, logw)
			if err != nil {
				return "", fmt.Errorf("cluster: %w", err)
			}
			md.WriteString(rep.markdown())
		case "tls":
			rep, err := runTLS(ctx, o, logw)
			if err != nil {
				return "", fmt.Errorf("tls: %w", err)
			}
			md.WriteString(rep.markdown())
		case "origin-faults":
			rep, err := runOriginFaults(ctx, o, logw)
			if err != nil {
				return "", fmt.Errorf("origin-faults: %w", err)
			}
			md.WriteString(rep.markdown())
		}
	}
	return md.String(), nil
}
