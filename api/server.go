// Package api serves the node's HTTP faces over fiber, on one listener:
// S3 (translated into gateway.Engine calls), the signed admin API, the
// monitor's open pages and the peer protocol. This file is the server
// itself: its options, the listener's setup, Serve and Shutdown.
package api

import (
	"context"
	"crypto/tls"
	"errors"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"
)

// Options configure a Server: its listener and what its faces share (the
// request log and metrics). Every field may be left zero.
type Options struct {
	// Registerer receives the request metrics; nil keeps them unregistered.
	Registerer prometheus.Registerer
	Logger     zerolog.Logger
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
	// IdleTimeout bounds how long a keep-alive connection may wait for its
	// next request. 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxConnsPerIP bounds the connections one client address may hold
	// open at once; a connection over it is closed as soon as it is
	// accepted (see trackingListener.Accept). 0 means
	// DefaultMaxConnsPerIP; a negative value means no limit.
	MaxConnsPerIP int
	// DisableLane has every request go through fasthttp: no GET lane
	// (lane.go), which answers plain signed GETs on plain TCP itself.
	DisableLane bool
	// ServerHeader is the Server header of every answer, such as
	// "granary/v1.2.3" (what `granary version --endpoint` reads); ""
	// sends none.
	ServerHeader string
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

func (o Options) normalize() Options {
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
	return o
}

// Server is the node's HTTP endpoint: one listener whose requests its
// faces answer (faces.go). It is safe for concurrent use.
type Server struct {
	*core // shared with the faces
	opts  Options
	app   *fiber.App
	// faces are the faces that claim their requests, in the order they
	// are asked; s3 answers every request none of them claims.
	faces []claimer
	s3    *S3

	// cancelBase ends core.baseCtx when a Shutdown runs out of time, so
	// stuck origin calls give up.
	cancelBase context.CancelFunc
	shutdown   sync.Once
	// ln is the listener Serve runs on, nil before Serve.
	ln atomic.Pointer[trackingListener]
	// lane is Serve's GET lane (lane.go), nil before Serve or without one.
	lane atomic.Pointer[lane]
	// stopping is set when Shutdown begins: a Serve that starts after it
	// closes its listener and returns (Shutdown closes ln if Serve stored
	// it first: whichever comes second sees the other).
	stopping atomic.Bool
}

// New returns a Server for opts answering with faces, which it mounts: a
// face serves one Server.
func New(opts Options, faces Faces) (*Server, error) {
	if faces.S3 == nil {
		return nil, errors.New("api: the S3 face is required")
	}
	opts = opts.normalize()
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	s := &Server{
		core:  &core{log: opts.Logger, metrics: m, ioTimeout: opts.IOTimeout},
		opts:  opts,
		faces: faces.claimers(),
		s3:    faces.S3,
	}
	base, cancel := context.WithCancel(context.Background())
	s.baseCtx, s.parents = base, newParents(base)
	s.cancelBase = func() { s.parents.stop(); cancel() }
	s.s3.mount(s.core)
	for _, f := range s.faces {
		f.mount(s.core)
	}
	s.app = fiber.New(s.fiberConfig())
	s.app.Server().HeaderReceived = s.headerReceived
	// A connection handed back to the GET lane (handBack) stays open.
	s.app.Server().KeepHijackedConns = true
	s.app.Server().ConnState = fasthttpReleased
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
		ServerHeader:                 s.opts.ServerHeader,
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
// fields keep the server's body limit and write timeout. A request that
// declares no body (a GET, a HEAD) keeps its deadline: nothing more is
// read for it, and moving the deadline is a timer change per request.
func (s *Server) headerReceived(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	markTooLarge(h)
	if h.ContentLength() == 0 {
		return fasthttp.RequestConfig{}
	}
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
	s.startFaces()
	if s.opts.TLS == nil && !s.opts.DisableLane {
		l := newLane(s, tl)
		s.lane.Store(l)
		go l.run()
		return s.app.Listener(laneListener{l})
	}
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
	if l := s.lane.Load(); l != nil {
		l.close() // Serve may have stored it without fiber serving it yet
		l.shutdown(ctx.Done())
	}
	close(done)
	if tl := s.ln.Load(); tl != nil {
		// Serve may have stored its listener without fiber knowing it
		// yet: a listener fiber closed already just fails to close again.
		tl.Close()
	}
	s.shutdown.Do(func() {
		s.stopFaces()
		s.cancelBase()
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
