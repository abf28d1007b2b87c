// Command slowlink puts internal/slowproxy's emulated WAN link in front of
// a TCP address, for scripts/bench-compare.sh: it prints the loopback
// address it listens on, then forwards every connection until SIGINT or
// SIGTERM. The default link is the loadtest's remote object store: 25 MB/s
// per connection, 100 MB/s in all, 20 ms each way.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/granary-dev/granary/internal/slowproxy"
)

func main() {
	upstream := flag.String("upstream", "", "host:port to forward to")
	o := slowproxy.Options{Stream: 25e6, Total: 100e6}
	stream, total := slowproxy.RateFlag(o.Stream), slowproxy.RateFlag(o.Total)
	flag.Var(&stream, "stream", "bandwidth of one connection, each direction (0: unlimited)")
	flag.Var(&total, "total", "bandwidth over all connections, each direction (0: unlimited)")
	latency := flag.Duration("latency", 20e6, "one-way delay")
	flag.Parse()
	if *upstream == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: slowlink -upstream HOST:PORT [-stream RATE] [-total RATE] [-latency D]")
		os.Exit(2)
	}
	o.Stream, o.Total, o.Latency = float64(stream), float64(total), *latency
	p, err := slowproxy.Start(*upstream, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowlink:", err)
		os.Exit(1)
	}
	fmt.Println(p.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	<-ctx.Done()
	stop()
	p.Close()
}
