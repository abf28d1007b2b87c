// The epochs scenario's links and its headline: the link the issue
// measures training with (no per-connection cap, 100 MB/s in all, 5 ms
// one way), read directly with minio-go, through nginx proxy_cache (fresh
// cache) and through granary (a cache that holds the data set), for the
// same epochs in the same orders.
package main

import (
	"context"
	"fmt"
	"time"

	"github.com/granary-dev/granary/internal/slowproxy"
)

// linkUncapped is the link field of the headline's rows ("" is the
// capped link).
const linkUncapped = "uncapped"

// cfgNginx is the nginx reference's configuration name.
const cfgNginx = "nginx proxy_cache, fresh cache"

// cfgAnonymous is granary read as nginx is: unsigned GETs of a bucket
// the node serves public-read (anonymous-read in its configuration).
const cfgAnonymous = "gateway, unsigned reads (anonymous-read bucket)"

// uncappedLink is the headline's link, fixed (the -slow-* flags shape
// the capped link only): a remote object store whose connections are
// not capped one by one, as a training cluster's link to its store.
func uncappedLink() slowproxy.Options {
	return slowproxy.Options{Stream: 0, Total: 100e6, Latency: 5 * time.Millisecond}
}

// epochsSlow is the capped link to the origin unless -slow-* flags say
// otherwise: a remote object store as a small-file reader sees it, where
// the round trip per request dominates (20 ms each way), with a
// per-connection and an aggregate bandwidth cap.
func epochsSlow() slowproxy.Options {
	return slowproxy.Options{Stream: 25e6, Total: 100e6, Latency: 20 * time.Millisecond}
}

// epochsLink is the epochs scenarios' capped link to their origin: their
// defaults, each replaced by its -slow-* flag when given.
func epochsLink(o options) slowproxy.Options {
	slow := epochsSlow()
	for _, name := range o.slowSet {
		switch name {
		case "slow-stream":
			slow.Stream = o.slow.Stream
		case "slow-total":
			slow.Total = o.slow.Total
		case "slow-latency":
			slow.Latency = o.slow.Latency
		}
	}
	return slow
}

// headline measures the uncapped link: direct, nginx, then granary (with
// a binary), each for plan.epochs epochs.
func (r *epochsRun) headline(ctx context.Context) error {
	if err := r.direct(ctx, linkUncapped, r.plan.epochs); err != nil {
		return err
	}
	if err := r.nginxEpochs(ctx); err != nil {
		return fmt.Errorf("%s: %w", cfgNginx, err)
	}
	if r.bin == "" {
		return nil
	}
	ram, disk := r.plan.fitBudget()
	if err := r.gateway(ctx, gwConfig{name: cfgFits, link: linkUncapped, ram: ram, disk: disk, epochs: r.plan.epochs}); err != nil {
		return err
	}
	c := gwConfig{name: cfgAnonymous, link: linkUncapped, ram: ram, disk: disk, epochs: r.plan.epochs, anonymous: true}
	return r.gateway(ctx, c)
}
