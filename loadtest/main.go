// Command loadtest measures a granary binary against MinIO direct, a
// trivial in-memory Go HTTP server and nginx proxy_cache (the reference
// cache, nginx.go), in one run on this machine, and writes a markdown
// report (absolute numbers and ratios).
//
//	go run ./loadtest -granary bin/granary [-quick] [-out FILE] [-scenario reads,bodies,checkpoint,mount,epochs,hdfs-epochs,cluster,tls,origin-faults]
//	go run ./loadtest -endpoint URL -bucket NAME [-prefix P] [-reuse] [-quick] [-scenario reads]
//
// The scenarios are registered in scenarios.go, one entry each (name,
// description, what it measures and starts, whether it takes -endpoint,
// its run function); `-help` lists them, and each scenario's own files
// (reads.go, checkpoint.go, epochs.go, ...) say what it measures in
// detail. The reads, checkpoint and epochs scenarios measure nginx
// proxy_cache, the reference cache, beside granary: they need nginx,
// which `make bench-deps` installs.
//
// With -endpoint, the load test starts no server of its own: it measures
// the S3 endpoint at URL (Granary or any other, with the credentials of
// AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or GRANARY_ACCESS_KEY/
// GRANARY_SECRET_KEY) with the scenarios that take one (endpoint.go).
// Without it, everything runs on loopback; either way, everything the
// load test starts stops at the end, every loop is bounded by its object
// count and the whole run by -timeout.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
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
	scenarios []scenario        // from the registry, in run order
	endpoint  endpointOptions   // -endpoint and its companions; zero: the scenarios start their own servers
	slow      slowproxy.Options // the checkpoint scenario's link to its origin
	slowSet   []string          // the -slow-* flags given (epochs, hdfs-epochs and cluster take only these from slow)
	shardSize int64             // checkpoint shard size; 0: by -quick
	pin       bool              // pin each part to cores of its own where there are enough (cores.go)
}

func main() {
	var o options
	var scenarios string
	def := slowproxy.DefaultOptions()
	stream, total := slowproxy.RateFlag(def.Stream), slowproxy.RateFlag(def.Total)
	flag.StringVar(&o.granary, "granary", "", "granary binary to measure (empty: MinIO, the trivial server and nginx only, or the direct and nginx rows of checkpoint and epochs)")
	flag.BoolVar(&o.quick, "quick", false, "small sizes for a smoke run (300 objects per set, 64MiB large object; bodies 300 objects per set; checkpoint 4 x 32MiB; epochs and hdfs-epochs 2,000 samples; cluster 300 small, 2 x 64MiB large, 200 objects in the origin workload; tls 300 objects per set, 64MiB, one round)")
	flag.StringVar(&o.out, "out", "", outUsage())
	flag.DurationVar(&o.timeout, "timeout", 45*time.Minute, "bound on the whole run")
	flag.StringVar(&scenarios, "scenario", "reads", scenarioUsage())
	flag.BoolVar(&o.pin, "pin", true, fmt.Sprintf("with %d or more cores, run the cache (or each cluster node), the origin and the client on cores of their own (-pin=false: share them all; never with -endpoint)", minPinCores))
	endpointFlags(&o.endpoint)
	flag.Var(&stream, "slow-stream", "checkpoint, epochs, hdfs-epochs and cluster: bandwidth of one connection to the origin, each direction (0: unlimited)")
	flag.Var(&total, "slow-total", "checkpoint, epochs, hdfs-epochs and cluster: bandwidth over all connections to the origin, each direction (0: unlimited)")
	flag.DurationVar(&o.slow.Latency, "slow-latency", def.Latency, "checkpoint, epochs, hdfs-epochs and cluster: one-way latency to the origin (defaults of epochs' capped link, hdfs-epochs and cluster, each replaced by its flag when given: 25MB/s per connection, 100MB/s in all, 20ms; epochs' headline link is fixed)")
	flag.StringVar(&originPayload, "origin-payload", "", "granary's uploads to MinIO: signed (its default) or crc32c (payload= in every node's origin URL)")
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
	if o.scenarios, err = parseScenarios(scenarios, o.endpoint.url != ""); err == nil {
		err = o.endpoint.check(os.LookupEnv, o.granary)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(2)
	}
	// An -endpoint's report is not the committed figures of this machine's
	// lineup: it goes to -out only.
	if o.out == "" && !o.quick && o.endpoint.url == "" {
		name := "latest.md"
		if len(o.scenarios) == 1 {
			name = o.scenarios[0].outFile()
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
