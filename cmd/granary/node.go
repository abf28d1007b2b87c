// Wiring of a node: the Config turned into the origin, the cache tiers,
// the engine and the API server, and their orderly close.
package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/access"
	"github.com/granary-dev/granary/api"
	"github.com/granary-dev/granary/cluster"
	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/ops"
	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/catalog"
	"github.com/granary-dev/granary/store/disk"
	"github.com/granary-dev/granary/store/origin/fs"
	"github.com/granary-dev/granary/store/origin/hdfs"
	"github.com/granary-dev/granary/store/origin/s3"
	"github.com/granary-dev/granary/store/parts"
	"github.com/granary-dev/granary/store/pins"
	"github.com/granary-dev/granary/store/ram"
	"github.com/granary-dev/granary/store/writeback"
)

// node is a built, not yet serving, Granary node. closers are closed in
// order after the server stopped: the engine before the tiers it writes
// to, the tiers before the origin (buildNode prepends each as it opens
// it, so the order is the reverse of opening).
type node struct {
	server  *api.Server
	closers []namedCloser
	// gossip is the address this node gossips at, what other nodes
	// --join; "" without gossip.
	gossip string
	// tls is what the node serves HTTPS with; nil: plain HTTP.
	tls *tls.Config
}

type namedCloser struct {
	name string
	io.Closer
}

// closeFunc is a func that cannot fail, as an io.Closer.
type closeFunc func()

func (f closeFunc) Close() error { f(); return nil }

func (n *node) close(log zerolog.Logger) {
	for _, c := range n.closers {
		if err := c.Close(); err != nil {
			log.Error().Err(err).Str("component", c.name).Msg("close failed")
		}
	}
}

// buildNode creates the data directories, the origin, the tiers, the
// engine and the API server. On error, whatever was opened is closed.
func buildNode(cfg Config, spec originSpec, oak, osk string, keys *access.Registry, secret []byte, log zerolog.Logger) (n *node, err error) {
	n = &node{}
	defer func() {
		if err != nil {
			n.close(log)
		}
	}()
	var origin store.Origin
	if spec.Scheme == "hdfs" {
		spec.PartsDir = filepath.Join(cfg.DataDir, "hdfs-parts")
		var o *hdfs.Origin
		if o, err = openHDFS(spec, cfg, log); err == nil {
			origin = o
		}
	} else {
		spec.CAFile = cfg.OriginCAFile
		spec.Private = spec.Scheme == "file" && within(spec.Dir, cfg.DataDir)
		origin, err = openOrigin(spec, oak, osk, time.Duration(cfg.OriginTimeout))
	}
	if err != nil {
		return n, err
	}
	if c, ok := origin.(io.Closer); ok {
		n.closers = append(n.closers, namedCloser{"origin", c})
	}
	reg, err := newRegistry(cfg.DataDir)
	if err != nil {
		return n, err
	}
	// Everything below reaches the origin through its guard.
	g, err := guardOrigin(cfg, origin, reg, log)
	if err != nil {
		return n, err
	}
	n.closers = append([]namedCloser{{"origin guard", g}}, n.closers...)
	origin = g.Origin()
	pinSet, err := pins.Open(cfg.ConfiguredPins(), filepath.Join(cfg.DataDir, "pins.json"))
	if err != nil {
		return n, err
	}
	certs, err := nodeCerts(cfg, log)
	if err != nil {
		return n, usageError{err}
	}
	var cl *clusterParts
	if cfg.Cluster.enabled() {
		if cl, err = openCluster(cfg, secret, origin, certs, log); err != nil {
			return n, err
		}
		n.closers = append([]namedCloser{{"cluster", cl}}, n.closers...)
		if g, ok := cl.member.(*cluster.Gossip); ok {
			n.gossip = g.Addr()
		}
	}
	tiers, err := openTiers(cfg, pinSet, cl != nil, n, log)
	if err != nil {
		return n, err
	}
	warnBudgets(cfg, tiers, log)
	if cl != nil {
		if err := reg.Register(cl.membersGauge()); err != nil {
			return n, err
		}
	}
	fresh, buckets, err := cfg.Freshnesses()
	if err != nil {
		return n, usageError{err}
	}
	mode, modes, err := cfg.WriteModes()
	if err != nil {
		return n, usageError{err}
	}
	// The log uploads nothing until Start, below, once its observers (the
	// cluster and the engine) exist.
	wb, err := openWriteBack(cfg, origin, mode, modes, reg, log)
	if err != nil {
		return n, err
	}
	n.closers = append([]namedCloser{{"write-back log", wb}}, n.closers...)
	cat, err := catalog.Open(catalog.Options{Path: filepath.Join(cfg.DataDir, "catalog.db"),
		Logger: log.With().Str("component", "catalog").Logger()})
	if err != nil {
		return n, fmt.Errorf("catalog: %w", err)
	}
	n.closers = append([]namedCloser{{"catalog", cat}}, n.closers...)
	tee, err := parts.OpenTee(filepath.Join(cfg.DataDir, "tee"))
	if err != nil {
		return n, fmt.Errorf("gateway: tee dir: %w", err)
	}
	reserve := int64(cfg.RAM) - ramTierBytes(int64(cfg.RAM))
	var peers gateway.Peers
	if cl != nil {
		peers = cl.peers()
	}
	eng, err := gateway.New(gateway.Options{
		Peers: peers, Owners: cfg.Cluster.Owners, Everywhere: cfg.EverywhereRule(), Hot: tiers.hot, HotDisk: tiers.hotDisk,
		Catalog: cat, Pins: pinSet, Quotas: cfg.Quotas(),
		Origin: wb, Staging: wb, RAM: tiers.ram, Disk: tiers.disk, ChunkSize: int64(cfg.ChunkSize),
		WorkingBytes: reserve / 2, DiskQueueBytes: diskQueueBytes(reserve, int64(cfg.ChunkSize)),
		Freshness: fresh, Buckets: buckets, WriteMode: mode, WriteModes: modes,
		Tee: tee, OriginTimeout: time.Duration(cfg.OriginTimeout), Health: g,
		Registerer: reg, Logger: log, // the engine names itself
	})
	if err != nil {
		return n, fmt.Errorf("gateway: %w", err)
	}
	n.closers = append([]namedCloser{{"gateway", eng}}, n.closers...)
	if cl != nil {
		wb.Start(cl.node, eng.WriteBackObserver()) // a copy on another member first
	} else {
		wb.Start(eng.WriteBackObserver())
	}
	jobs, err := ops.New(eng, ops.Options{Registerer: reg, Logger: log})
	if err != nil {
		return n, fmt.Errorf("ops: %w", err)
	}
	n.closers = append([]namedCloser{{"warm-ups", jobs}}, n.closers...)
	stop, err := startSchedules(cfg, jobs, log.With().Str("component", "schedule").Logger())
	if err != nil {
		return n, usageError{err}
	}
	n.closers = append([]namedCloser{{"scheduler", closeFunc(stop)}}, n.closers...)
	n.tls, err = nodeTLS(cfg, certs)
	if err != nil {
		return n, usageError{err}
	}
	token, err := metricsToken(cfg, log)
	if err != nil {
		return n, usageError{err}
	}
	n.server, err = buildServer(cfg, serverParts{eng: eng, jobs: jobs, keys: keys, cl: cl,
		reg: reg, token: token, tls: n.tls}, log)
	return n, err
}

// openWriteBack opens the write-back log under <data-dir>/writeback in
// front of origin. It is opened whatever the modes: entries a previous run
// accepted in write-back mode are uploaded even if no bucket is in that
// mode any more.
func openWriteBack(cfg Config, origin store.Origin, mode gateway.WriteMode, modes map[string]gateway.WriteMode,
	reg prometheus.Registerer, log zerolog.Logger) (*writeback.Log, error) {
	wb, err := writeback.Open(writeback.Options{
		Origin: origin, Dir: filepath.Join(cfg.DataDir, "writeback"),
		WriteBack: func(bucket string) bool {
			m, ok := modes[bucket]
			if !ok {
				m = mode
			}
			return m == gateway.WriteBack
		},
		DirtyLimit: cfg.DirtyBytes(), Registerer: reg,
		Logger: log.With().Str("component", "writeback").Logger(),
	})
	if err != nil {
		return nil, fmt.Errorf("write-back log: %w", err)
	}
	return wb, nil
}

// within reports whether path is dir or lies under it (both absolute):
// a file origin there (the default one, <data-dir>/origin) is part of the
// node's data and gets its modes; one elsewhere is a directory other
// programs may share.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// openOrigin opens the origin spec names (a file origin creates its root).
// Each constructor's result is checked before it becomes an interface, so
// a failed open never yields a non-nil store.Origin holding a nil pointer.
// An s3 origin's region is the one in its URL (the origin package's
// default when absent), independent of the region this node reports;
// timeout bounds its connect, its answers and a write that stalls.
func openOrigin(spec originSpec, access, secret string, timeout time.Duration) (store.Origin, error) {
	switch spec.Scheme {
	case "file":
		o, err := fs.New(fs.Options{Root: spec.Dir, Private: spec.Private})
		if err != nil {
			return nil, fmt.Errorf("origin: %w", err)
		}
		return o, nil
	case "s3":
		cas, err := caPool(spec.CAFile)
		if err != nil {
			return nil, fmt.Errorf("origin: %w", err)
		}
		o, err := s3.New(s3.Options{
			Endpoint: spec.endpointHostPort(), Secure: spec.Secure, Region: spec.Region,
			PayloadCRC32C: spec.PayloadCRC32C, AccessKey: access, SecretKey: secret, RootCAs: cas,
			DialTimeout: timeout, ResponseHeaderTimeout: timeout, WriteStallTimeout: timeout,
		})
		if err != nil {
			return nil, fmt.Errorf("origin: %w", err)
		}
		return o, nil
	}
	return nil, usageError{fmt.Errorf("origin: unknown scheme %q", spec.Scheme)}
}

// nodeTiers are a node's cache tiers; nil where its budget is zero (the
// engine then skips it) or, for the hot tiers, where it is not in a
// cluster.
type nodeTiers struct {
	ram, disk    store.Tier // the chunks this node owns
	hot, hotDisk store.Tier // copies of chunks other members own
}

// diskUsed is what the disk tiers hold.
func (ts nodeTiers) diskUsed() int64 {
	var n int64
	for _, t := range []store.Tier{ts.disk, ts.hotDisk} {
		if t != nil {
			n += t.Stats().UsedBytes
		}
	}
	return n
}

// openTiers opens the RAM tier and the disk tier under <data-dir>/cache,
// and in a cluster the hot tiers beside them, registering each with n for
// closing as soon as it is open.
//
// In a cluster, copies of chunks read from their owners share each
// tier's budget: they use the room owned chunks leave and give it back
// when owned chunks need it, never the other way (store/ram/shared.go,
// store/disk/shared.go). A data set that fits every node is held by
// every node, in RAM or on disk; a large one stays sharded.
func openTiers(cfg Config, pins store.PinSet, clustered bool, n *node, log zerolog.Logger) (ts nodeTiers, err error) {
	if cfg.RAM > 0 {
		capacity := ramTierBytes(int64(cfg.RAM))
		var shared *ram.Shared
		if clustered {
			shared = ram.NewShared(capacity)
			hot := ram.New(ram.Options{Capacity: capacity, Policy: cfg.Eviction, Shared: shared, Yields: true, Sendable: true})
			n.closers = append([]namedCloser{{"hot", hot}}, n.closers...)
			ts.hot = hot
		}
		r := ram.New(ram.Options{Capacity: capacity, Policy: cfg.Eviction, Pins: pins, Quotas: cfg.Quotas(), Shared: shared, Sendable: true})
		n.closers = append([]namedCloser{{"ram", r}}, n.closers...)
		if err := r.Sendable(); err != nil {
			log.Warn().Err(err).Msg("warm bodies are copied into sockets: the RAM tier has no memory file to send from")
		}
		ts.ram = r
	}
	if cfg.Disk == 0 {
		return ts, nil
	}
	var shared *disk.Shared
	if clustered {
		shared = disk.NewShared(int64(cfg.Disk))
	}
	// Chunk IDs do not carry the chunk size, so each size gets its own
	// cache directory: a restart with another size never serves chunks
	// cut under the old one (their directory can be deleted by hand).
	size := strconv.FormatInt(int64(cfg.ChunkSize), 10)
	d, err := openDisk(cfg, "disk", "chunk-"+size, disk.Options{Pins: pins, Quotas: cfg.Quotas(), Shared: shared}, n, log)
	if err != nil {
		return ts, err
	}
	ts.disk = d
	hot := "hot-" + size
	if !clustered {
		// Copies kept while this node was a member are outside the
		// budget now, and their owners hold them: drop them.
		if err := os.RemoveAll(filepath.Join(cfg.DataDir, "cache", hot)); err != nil {
			log.Warn().Err(err).Msg("removing the hot copies of a former cluster member")
		}
		return ts, nil
	}
	if ts.hotDisk, err = openDisk(cfg, "hot-disk", hot, disk.Options{Shared: shared, Yields: true}, n, log); err != nil {
		return ts, err
	}
	return ts, nil
}

// openDisk opens a disk tier named name in <data-dir>/cache/dir with
// the disk budget and o's other options.
func openDisk(cfg Config, name, dir string, o disk.Options, n *node, log zerolog.Logger) (store.Tier, error) {
	o.Dir = filepath.Join(cfg.DataDir, "cache", dir)
	if err := os.MkdirAll(o.Dir, store.PrivateDirMode); err != nil {
		return nil, fmt.Errorf("%s tier: %w", name, err)
	}
	o.Capacity, o.Policy, o.Logger = int64(cfg.Disk), cfg.Eviction, log.With().Str("component", name).Logger()
	o.Writers = gateway.FillWorkers // only the engine's disk filler puts chunks here
	d, err := disk.Open(o)
	if err != nil {
		return nil, fmt.Errorf("%s tier: %w", name, err)
	}
	n.closers = append([]namedCloser{{name, d}}, n.closers...)
	return d, nil
}

// The memory budget (--ram) covers the RAM tier and the node's working
// memory: chunks held for reads in flight, read ahead or not yet sent to
// their clients, and chunks being fetched (half the reserve: the engine's
// WorkingBytes, past which reads wait or get 503 SlowDown), chunks queued
// for the disk tier (a quarter; only those RAM already evicted cost
// extra), metadata caches and connection buffers. The tier gets the budget
// less the reserve.
const maxWorkingReserve = 256 << 20

// diskQueueBytes is the disk queue's share of the reserve: a quarter, but
// at least two chunks, or with a small budget every chunk would be dropped
// on its way to the disk tier. No reserve (no RAM budget) gives 0, the
// engine's default.
func diskQueueBytes(reserve, chunk int64) int64 {
	if reserve == 0 {
		return 0
	}
	return max(reserve/4, 2*chunk)
}

// ramTierBytes is the RAM tier's share of a memory budget.
func ramTierBytes(budget int64) int64 {
	return budget - min(budget/8, maxWorkingReserve)
}

// newRegistry returns a metrics registry with the Go runtime and process
// collectors and the limits' gauges (of dataDir's filesystem), shared by
// the engine and the API.
func newRegistry(dataDir string) (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	for _, c := range append([]prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	}, resourceCollectors(dataDir)...) {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return reg, nil
}
