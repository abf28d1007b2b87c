// A throttling TCP proxy that makes the local MinIO look like a remote
// object store: every connection is forwarded to one upstream address
// through a link with a per-connection bandwidth, an aggregate bandwidth
// over all connections and a one-way latency.
package slowproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options shape the emulated link. Each direction of each connection
// is limited on its own, as on a full-duplex network.
type Options struct {
	Stream  float64       // bytes/s of one connection, each direction; 0: unlimited
	Total   float64       // bytes/s over all connections, each direction; 0: unlimited
	Latency time.Duration // one-way delay added to every forwarded segment
}

func DefaultOptions() Options {
	return Options{Stream: 50e6, Total: 100e6, Latency: 5 * time.Millisecond}
}

func (o Options) String() string {
	return fmt.Sprintf("%s per connection, %s over all connections (each direction), %v one-way latency",
		RateName(o.Stream), RateName(o.Total), o.Latency)
}

// proxySegment is the largest read the proxy forwards as one segment.
const proxySegment = 64 << 10

// Proxy forwards every connection accepted on ln to upstream. Close
// stops it and ends every goroutine it started.
type Proxy struct {
	ln       net.Listener
	upstream string
	opt      Options
	queue    int          // segments in flight per direction of a connection
	up, down *tokenBucket // aggregate buckets, toward upstream and back; nil: unlimited
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup // the accept loop, every connection handler and reader
	bufs     sync.Pool      // *[]byte of proxySegment bytes
	// sentUp and sentDown count the bytes forwarded (handed to the
	// receiving side's socket, or about to be) toward upstream and
	// back, over all connections.
	sentUp, sentDown atomic.Int64
}

// segment is one read, due to be written at due.
type segment struct {
	buf *[]byte
	n   int
	due time.Time
}

// Start listens on a loopback port and forwards to upstream
// (host:port) with the link opt describes.
func Start(upstream string, opt Options) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, upstream: upstream, opt: opt,
		up: newTokenBucket(opt.Total), down: newTokenBucket(opt.Total)}
	p.bufs.New = func() any { b := make([]byte, proxySegment); return &b }
	// The queue must hold what is in flight on the link, rate x latency,
	// even when reads come back small (4 KiB), with room to spare.
	rate := opt.Stream
	if rate == 0 || (opt.Total > 0 && opt.Total < rate) {
		rate = opt.Total
	}
	if rate == 0 {
		rate = 10e9
	}
	p.queue = min(4096, 16+int(2*rate*opt.Latency.Seconds()/4096))
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// forwarded returns the bytes forwarded so far toward upstream and back.
func (p *Proxy) Forwarded() (up, down int64) { return p.sentUp.Load(), p.sentDown.Load() }

// Close stops accepting, cuts every connection and waits for every
// goroutine of the proxy to end.
func (p *Proxy) Close() error {
	p.cancel()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.wg.Add(1)
		go p.handle(c)
	}
}

// handle forwards one connection both ways until both directions reach
// end of file, either fails, or the proxy closes.
func (p *Proxy) handle(client net.Conn) {
	defer p.wg.Done()
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	var d net.Dialer
	up, err := d.DialContext(ctx, "tcp", p.upstream)
	if err != nil {
		client.Close()
		return
	}
	errc := make(chan error, 2)
	go func() { errc <- p.pump(ctx, up, client, p.up, &p.sentUp) }()
	go func() { errc <- p.pump(ctx, client, up, p.down, &p.sentDown) }()
	// shut cuts both sides, which ends the pumps' reads and writes.
	shut := func() { cancel(); client.Close(); up.Close() }
	done := ctx.Done()
	for pending := 2; pending > 0; {
		select {
		case err := <-errc:
			pending--
			if err != nil {
				shut()
			}
		case <-done:
			done = nil
			shut()
		}
	}
	shut()
}

// pump copies src to dst through the link: a reader takes bandwidth
// tokens for each segment and stamps it due one latency later; this
// goroutine writes each segment when it is due. Segments overlap in
// flight, so latency delays the stream without cutting its rate. At end of
// file it half-closes dst. The reader is counted in p.wg: after an error
// the caller cuts the connection, which ends it.
func (p *Proxy) pump(ctx context.Context, dst, src net.Conn, total *tokenBucket, sent *atomic.Int64) error {
	segs := make(chan segment, p.queue)
	rerr := make(chan error, 1)
	stream := newTokenBucket(p.opt.Stream)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		rerr <- p.read(ctx, src, segs, stream, total)
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for s := range segs {
		if err := sleepUntil(ctx, timer, s.due); err != nil {
			return err
		}
		// Counted before the write: a receiver that got its last byte
		// must never find it missing from the count.
		sent.Add(int64(s.n))
		_, err := dst.Write((*s.buf)[:s.n])
		p.bufs.Put(s.buf)
		if err != nil {
			return err
		}
	}
	if err := <-rerr; err != nil {
		return err
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		return tc.CloseWrite()
	}
	return nil
}

// read fills segs from src until end of file (nil) or an error, and
// closes segs.
func (p *Proxy) read(ctx context.Context, src net.Conn, segs chan<- segment, stream, total *tokenBucket) error {
	defer close(segs)
	for {
		buf := p.bufs.Get().(*[]byte)
		n, err := src.Read(*buf)
		if n > 0 {
			// The stream's own pace first, then a share of the aggregate:
			// reserving the aggregate while the stream still waits would
			// waste aggregate time slots.
			if werr := stream.wait(ctx, n); werr != nil {
				return werr
			}
			if werr := total.wait(ctx, n); werr != nil {
				return werr
			}
			select {
			case segs <- segment{buf: buf, n: n, due: time.Now().Add(p.opt.Latency)}:
			case <-ctx.Done():
				return ctx.Err()
			}
		} else {
			p.bufs.Put(buf)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// sleepUntil waits until t on timer (which it resets), or returns ctx's
// error.
func sleepUntil(ctx context.Context, timer *time.Timer, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer.Reset(d)
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// tokenBucket paces bytes at rate per second with a small burst. A caller
// reserves its bytes before it waits (the count may go negative: a debt
// that later callers wait out), so concurrent callers are served in
// arrival order and the long-run rate is exact however coarse the sleeps.
// A nil *tokenBucket is unlimited.
type tokenBucket struct {
	rate  float64 // bytes per second, > 0
	burst float64 // most tokens saved up while idle
	mu    sync.Mutex
	// tokens and last are guarded by mu: the balance at time last.
	tokens float64
	last   time.Time
}

// newTokenBucket returns a bucket of rate bytes/s, or nil (unlimited) for
// a rate of 0. It starts full.
func newTokenBucket(rate float64) *tokenBucket {
	if rate <= 0 {
		return nil
	}
	// A segment, or 20 ms of traffic: a waiter that wakes up to 20 ms late
	// (a loaded machine) still gets its full rate.
	burst := max(proxySegment, rate/50)
	return &tokenBucket{rate: rate, burst: burst, tokens: burst, last: time.Now()}
}

// wait takes n tokens and sleeps until the balance they leave is paid.
func (b *tokenBucket) wait(ctx context.Context, n int) error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	now := time.Now()
	b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate) - float64(n)
	b.last = now
	debt := b.tokens
	b.mu.Unlock()
	if debt >= 0 {
		return nil
	}
	t := time.NewTimer(time.Duration(-debt / b.rate * float64(time.Second)))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RateFlag is a bandwidth flag such as "50MB/s", "1.5GiB/s" or "0"
// (unlimited), in bytes per second.
type RateFlag float64

func (r *RateFlag) String() string { return RateName(float64(*r)) }

func (r *RateFlag) Set(s string) error {
	v, err := ParseRate(s)
	if err == nil {
		*r = RateFlag(v)
	}
	return err
}

// ParseRate parses a size per second: a number, a unit (B, KB, MB, GB are
// powers of 1000; KiB, MiB, GiB of 1024; none means bytes) and an optional
// "/s". "0" means unlimited.
func ParseRate(s string) (float64, error) {
	t := strings.TrimSuffix(strings.TrimSpace(s), "/s")
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], t[i:]
	}
	mult, ok := map[string]float64{"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9,
		"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[unit]
	v, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || v < 0 {
		return 0, fmt.Errorf("bad rate %q: want e.g. 50MB/s, 1.5GiB/s or 0 (unlimited)", s)
	}
	return v * mult, nil
}

// RateName renders bytes/s as the flags take them.
func RateName(r float64) string {
	if r <= 0 {
		return "unlimited"
	}
	return strconv.FormatFloat(r/1e6, 'f', -1, 64) + "MB/s"
}
