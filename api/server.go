// Package api serves the S3 protocol (and the node's admin routes) over
// fiber, translating requests into gateway.Engine calls.
package api

import (
	"context"
	"crypto/tls"
	"errors"
	"math"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/granary-dev/granary/access"
	"github.com/granary-dev/granary/api/sigv4"
	"github.com/granary-dev/granary/cluster/peer"
	"github.com/granary-dev/granary/console"
	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/ops"
	"github.com/granary-dev/granary/ops/history"
)

// Options configure a Server. Engine and Access are required.
type Options struct {
	Engine *gateway.Engine
	// Ops runs the warm-ups and status the admin API serves; nil means
	// New builds one on Engine (registered with Registerer), which
	// Shutdown closes.
	Ops *ops.Ops
	// Access holds the access keys, their policies and the anonymous
	// policy; it may change its users while the server runs.
	Access *access.Registry
	// Region is reported by GetBucketLocation, and a request's credential
	// scope must name it (a signature for another region is refused with
	// AWS's error, which names this one); "" means us-east-1.
	Region string
	// Domains enable virtual-host style: a Host of "BUCKET.DOMAIN[:port]"
	// addresses BUCKET. Path style always works.
	Domains []string
	// Registerer receives the request metrics; Gatherer serves /metrics.
	// Either may be nil.
	Registerer prometheus.Registerer
	Gatherer   prometheus.Gatherer
	// MetricsToken, if set, puts /metrics behind a bearer token: a scrape
	// must send "Authorization: Bearer T" with T what MetricsToken returns
	// then (so the token can change while the node runs). It is called
	// once per scrape that carries a token; an empty result refuses them
	// all. Nil: /metrics is open. /healthz is always open.
	MetricsToken func() []byte
	Logger       zerolog.Logger
	// IOTimeout bounds how long a request may make no progress: reading
	// its body, or the client taking the response. It is renewed as bytes
	// move, so it never limits a large transfer that keeps moving. 0 means
	// DefaultIOTimeout.
	IOTimeout time.Duration
	// ReadHeaderTimeout bounds, as a whole, how long a connection may take
	// to send a request line and headers: from its accept for the first
	// request, from the first byte after an idle wait for the next ones.
	// It is not renewed by progress, so headers trickled a byte at a time
	// cannot hold a connection (MinIO's http.Server uses the same bound).
	// 0 means DefaultReadHeaderTimeout.
	ReadHeaderTimeout time.Duration
	// TLS, if set, serves HTTPS on the listener Serve gets.
	TLS *tls.Config
	// Peer, if set, makes this node a cluster member: it answers the peer
	// protocol under peer.Prefix.
	Peer *PeerOptions
	// IdleTimeout bounds how long a keep-alive connection may wait for its
	// next request. 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// ReadyNeedsOrigin makes /readyz answer 503 while the origin is down
	// (--serve-stale-when-down=false); by default ready means the cache
	// is up, since it serves what it holds whatever the origin does.
	ReadyNeedsOrigin bool
	// HistoryEvery is how often the node samples its traffic for
	// /_granary/history (the console's charts), which keeps the last
	// hour; 0 means history.DefaultEvery (5 s).
	HistoryEvery time.Duration
	// MaxConnsPerIP bounds the connections one client address may hold
	// open at once; a connection over it is closed as soon as it is
	// accepted (see trackingListener.Accept). 0 means
	// DefaultMaxConnsPerIP; a negative value means no limit.
	MaxConnsPerIP int
}

// Defaults of the zero Options values.
const (
	DefaultRegion            = "us-east-1"
	DefaultIOTimeout         = 2 * time.Minute
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultReadHeaderTimeout = 30 * time.Second
	// DefaultMaxConnsPerIP is generous because one address is often many
	// clients: a training host's data-loader processes, each with a
	// connection pool, pods behind one node's NAT, a cluster member's
	// peer traffic. It is there to keep one address from taking every
	// file descriptor, not to ration fair users.
	DefaultMaxConnsPerIP = 1024
)

const (
	// maxObjectSize is the largest single PUT S3 accepts.
	maxObjectSize = 5 << 30
	// chunkFraming is the allowance for aws-chunked framing on top of
	// maxObjectSize in the wire body limit.
	chunkFraming = 256 << 20
	// headerBufferSize bounds the request line plus headers (fasthttp
	// keeps one such buffer per connection): a 1,024-byte key fully
	// percent-encoded in both the path and x-amz-copy-source, 2 KiB of
	// metadata and the signature headers fit.
	headerBufferSize = 16 << 10
)

func (o Options) normalize() (Options, error) {
	if o.Engine == nil || o.Access == nil {
		return o, errors.New("api: Engine and Access are required")
	}
	if o.Region == "" {
		o.Region = DefaultRegion
	}
	if o.IOTimeout <= 0 {
		o.IOTimeout = DefaultIOTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	switch {
	case o.MaxConnsPerIP == 0:
		o.MaxConnsPerIP = DefaultMaxConnsPerIP
	case o.MaxConnsPerIP < 0:
		o.MaxConnsPerIP = 0 // trackingListener's "no limit"
	}
	domains := make([]string, 0, len(o.Domains))
	for _, d := range o.Domains {
		d = strings.ToLower(strings.Trim(strings.TrimSpace(d), "."))
		if d != "" {
			domains = append(domains, d)
		}
	}
	o.Domains = domains
	return o, nil
}

// Server is an S3 endpoint. It is safe for concurrent use.
type Server struct {
	opts     Options
	engine   *gateway.Engine
	ops      *ops.Ops
	ownOps   bool // ops was built by New: Shutdown closes it
	access   *access.Registry
	verifier *sigv4.Verifier
	log      zerolog.Logger
	metrics  *metrics
	routes   *routeTable
	app      *fiber.App
	peer     *peer.Handler // nil unless Options.Peer is set
	// domainSuffixes are "." + each domain, for virtual-host matching.
	domainSuffixes []string

	// baseCtx parents every request's context; cancelBase ends it when a
	// Shutdown runs out of time, so stuck origin calls give up.
	baseCtx    context.Context
	cancelBase context.CancelFunc
	shutdown   sync.Once
	// ln is the listener Serve runs on, nil before Serve.
	ln atomic.Pointer[trackingListener]
	// stopping is set when Shutdown begins: a Serve that starts after it
	// closes its listener and returns (Shutdown closes ln if Serve stored
	// it first: whichever comes second sees the other).
	stopping atomic.Bool

	console      *console.Handler  // the web console's assets
	recorder     *history.Recorder // the last hour's traffic, sampled from Serve to Shutdown
	recorderOnce sync.Once         // starts the recorder (see startRecorder)
	served       servedBytes       // object bytes sent, for the recorder
}

// New returns a Server for opts.
func New(opts Options) (*Server, error) {
	opts, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	s := &Server{
		opts:     opts,
		engine:   opts.Engine,
		ops:      opts.Ops,
		access:   opts.Access,
		verifier: &sigv4.Verifier{Creds: opts.Access, Region: opts.Region},
		log:      opts.Logger,
		metrics:  m,
		routes:   newRouteTable(),
	}
	if s.ops == nil {
		if s.ops, err = ops.New(opts.Engine, ops.Options{Registerer: opts.Registerer, Logger: opts.Logger}); err != nil {
			return nil, err
		}
		s.ownOps = true
	}
	if s.console, err = console.New(console.Options{Region: opts.Region}); err != nil {
		return nil, err
	}
	s.recorder = s.newRecorder()
	for _, d := range opts.Domains {
		s.domainSuffixes = append(s.domainSuffixes, "."+d)
	}
	s.baseCtx, s.cancelBase = context.WithCancel(context.Background())
	s.peer = s.newPeerHandler()
	s.app = fiber.New(s.fiberConfig())
	s.app.Server().HeaderReceived = s.headerReceived
	s.app.Use(s.entry)
	return s, nil
}

// responseBufferSize is the connection's write buffer: large enough that
// the headers and body of a small object (a training sample: up to 128
// KiB) leave in one write system call, one segment train the client
// wakes up for once (fasthttp's 4 KiB default splits even a 4 KiB
// object's response in two). fasthttp takes the buffer from a pool for
// the time of a response, so an idle connection holds none; a larger
// body bypasses it.
const responseBufferSize = 132 << 10

// fiberConfig is the fasthttp setup: bodies are streamed, never buffered,
// and no default content type or startup banner is emitted.

func (s *Server) fiberConfig() fiber.Config {
	return fiber.Config{
		StreamRequestBody:            true,
		DisablePreParseMultipartForm: true, // an object may be multipart/form-data
		BodyLimit:                    int(min(int64(math.MaxInt), maxObjectSize+chunkFraming)),
		ReadBufferSize:               headerBufferSize,
		WriteBufferSize:              responseBufferSize,
		DisableStartupMessage:        true,
		DisableDefaultContentType:    true,
		// fasthttp sets ReadTimeout as the read deadline before a request's
		// line and headers (after the idle wait of a keep-alive
		// connection), so it bounds the header phase; once the headers are
		// in, headerReceived moves the deadline to IOTimeout for the body,
		// whose reads renew it as they go (see bodyReader). WriteTimeout is
		// set before each response is written, and streamed bodies renew it
		// per chunk (see objectStream).
		ReadTimeout:  s.opts.ReadHeaderTimeout,
		WriteTimeout: s.opts.IOTimeout,
		IdleTimeout:  s.opts.IdleTimeout,
		ErrorHandler: s.protocolError,
	}
}

// headerReceived runs once a request's headers are read, before fasthttp
// reads the first body bytes: the body gets IOTimeout from here on, not
// what is left of the header phase's ReadHeaderTimeout, and a PUT too
// large to take is kept from a 100 Continue (markTooLarge). The zero
// fields keep the server's body limit and write timeout.
func (s *Server) headerReceived(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	markTooLarge(h)
	return fasthttp.RequestConfig{ReadTimeout: s.opts.IOTimeout}
}

// Serve answers requests on ln (over TLS if Options.TLS is set) until
// Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	if s.opts.TLS != nil {
		ln = newTLSListener(ln, s.opts.TLS)
	}
	tl := newTrackingListener(ln, s.opts.MaxConnsPerIP, s.metrics.refused.Inc)
	s.ln.Store(tl)
	if s.stopping.Load() {
		tl.Close()
		return net.ErrClosed
	}
	s.startRecorder()
	return s.app.Listener(tl)
}

// Shutdown stops accepting connections, closes idle ones and waits for
// open requests until ctx ends; then the requests still running are
// cancelled.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopping.Store(true)
	done := make(chan struct{})
	go s.expireUnusedUntil(done)
	err := s.app.ShutdownWithContext(ctx)
	close(done)
	if tl := s.ln.Load(); tl != nil {
		// Serve may have stored its listener without fiber knowing it
		// yet: a listener fiber closed already just fails to close again.
		tl.Close()
	}
	s.shutdown.Do(func() {
		s.stopRecorder()
		s.cancelBase()
		if s.ownOps {
			s.ops.Close()
		}
	})
	return err
}

// expireUnusedUntil ends never-used connections (see trackingListener)
// while a shutdown runs: fasthttp closes only the idle keep-alive ones.
func (s *Server) expireUnusedUntil(done <-chan struct{}) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if tl := s.ln.Load(); tl != nil {
			tl.expireUnused()
		}
		select {
		case <-done:
			return
		case <-tick.C:
		}
	}
}
