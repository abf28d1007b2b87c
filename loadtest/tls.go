// The tls scenario: what HTTPS costs. Two `granary serve` nodes in front
// of the same MinIO, one serving HTTP and one HTTPS (a CA and certificate
// made for the run), both warmed with the same data, are read by the
// same client: warm GETs of small objects at 64 concurrent keep-alive
// connections, signed and unsigned, and one large object as a single
// stream, every byte checked. nginx proxy_cache, also warm, over HTTP and
// over HTTPS with the same certificate, is read the same way (unsigned):
// what TLS costs the cache a user would otherwise deploy. A trivial Go
// server serving the same bytes from memory over HTTP and over HTTPS
// (crypto/tls, as net/http uses it) is the ceiling: what TLS costs any
// Go server on these cores, with this client. The passes
// alternate between the targets, several rounds each, and the report
// gives HTTPS / HTTP and Granary / nginx.
package main

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/internal/testcerts"
)

// tlsPlan is the shape of a tls run.
type tlsPlan struct {
	count     int   // objects per small set
	sizes     []int // small object sizes
	conc      int   // concurrent clients (and keep-alive connections)
	largeSize int64
	rounds    int   // measured passes of each row on each node
	ram       int64 // --ram of each node: holds every object
}

func fullTLSPlan() tlsPlan {
	return tlsPlan{count: 10_000, sizes: []int{4 << 10, 100 << 10}, conc: 64, largeSize: 1 << 30, rounds: 3, ram: 3 << 30}
}

func quickTLSPlan() tlsPlan {
	return tlsPlan{count: 300, sizes: []int{4 << 10, 100 << 10}, conc: 64, largeSize: 64 << 20, rounds: 1, ram: 512 << 20}
}

// Protocols and clients of the rows.
const (
	protoHTTP       = "HTTP"
	protoHTTPS      = "HTTPS"
	protoNginxHTTP  = "nginx HTTP"
	protoNginxHTTPS = "nginx HTTPS"
	protoGoHTTP     = "Go HTTP"
	protoGoHTTPS    = "Go HTTPS"
	clientSigned    = "signed"
	clientUnsigned  = "unsigned"
)

// tlsNodes are the targets measured, and how the HTTPS node was reached.
type tlsNodes struct {
	plain, secure           *granaryProc
	nginxPlain, nginxSecure *nginxProc
	goPlain, goSecure       *trivialServer // the ceiling: bytes from memory
	negotiated              string         // TLS version and cipher suite of a connection to secure
}

// runTLS measures the scenario at its full or -quick size.
func runTLS(ctx context.Context, o options, logw io.Writer) (*tlsReport, error) {
	p := fullTLSPlan()
	if o.quick {
		p = quickTLSPlan()
	}
	return runTLSPlan(ctx, o, p, logw)
}

// runTLSPlan measures the scenario shaped by p. A failure after some rows
// were measured logs the partial report.
func runTLSPlan(ctx context.Context, o options, p tlsPlan, logw io.Writer) (*tlsReport, error) {
	if o.granary == "" {
		return nil, errors.New("the tls scenario needs a granary binary (-granary)")
	}
	logf := func(format string, args ...any) { fmt.Fprintf(logw, "loadtest: tls: "+format+"\n", args...) }
	d := newDataset(plan{count: p.count, sizes: p.sizes, concs: []int{p.conc}, largeSize: p.largeSize})
	mio, err := seededMinio(ctx, d, logf)
	if err != nil {
		return nil, err
	}
	defer mio.Stop()
	nodes, stop, err := startTLSNodes(ctx, o.granary, mio, d, p.ram)
	if err != nil {
		return nil, err
	}
	defer stop()
	rep := &tlsReport{plan: p, quick: o.quick, started: time.Now(), negotiated: nodes.negotiated}
	rep.seal, rep.open = aesGCMRates()
	err = measureLogged(&rep.loadStart, &rep.loadEnd, func() error { return measureTLS(ctx, d, nodes, rep, logf) },
		func() bool { return len(rep.rows) > 0 }, rep.markdown, logf)
	if err != nil {
		return nil, fmt.Errorf("%w\nHTTP node log tail:\n%s\nHTTPS node log tail:\n%s", err, nodes.plain.tail(), nodes.secure.tail())
	}
	return rep, nil
}

// startTLSNodes starts the HTTP and the HTTPS node in front of mio, each
// with ram and no disk tier, immutable metadata (a warm pass never asks
// the origin) and d's bucket anonymous-read (for the unsigned rows), and
// nginx over HTTP and HTTPS (the bucket public-read at mio); stop stops
// them all and removes what they used.
func startTLSNodes(ctx context.Context, bin string, mio *miniotest.Server, d *dataset, ram int64) (n tlsNodes, stop func(), err error) {
	bucket := d.bucket
	dir, err := os.MkdirTemp("", "granary-loadtest-tls-")
	if err != nil {
		return n, nil, err
	}
	var cleanup []func()
	stop = func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
		os.RemoveAll(dir)
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	ca, err := testcerts.New(dir)
	if err != nil {
		return n, nil, err
	}
	cert, key := filepath.Join(dir, "node.crt"), filepath.Join(dir, "node.key")
	if _, err = ca.WriteLeaf(cert, key); err != nil {
		return n, nil, err
	}
	cfg, err := anonymousConfig(bucket)
	if err != nil {
		return n, nil, err
	}
	cleanup = append(cleanup, func() { os.Remove(cfg) })
	flags := []string{"--config", cfg, "--freshness", "immutable"}
	if n.plain, err = startGranary(bin, mio.Endpoint, mio.AccessKey, mio.SecretKey, ram, 0, flags...); err != nil {
		return n, nil, err
	}
	cleanup = append(cleanup, n.plain.stop)
	n.secure, err = startGranaryWith(ca.Pool(), bin, mio.Endpoint, mio.AccessKey, mio.SecretKey, ram, 0,
		append(flags, "--tls-cert", cert, "--tls-key", key)...)
	if err != nil {
		return n, nil, err
	}
	cleanup = append(cleanup, n.secure.stop)
	if n.negotiated, err = negotiated(n.secure); err != nil {
		return n, nil, err
	}
	if err = publicRead(ctx, mio, bucket); err != nil {
		return n, nil, err
	}
	o := nginxOptions{upstream: mio.Endpoint, objects: len(d.all()), bytes: d.bytes()}
	if n.nginxPlain, err = startNginx(o); err != nil {
		return n, nil, err
	}
	cleanup = append(cleanup, n.nginxPlain.stop)
	o.certFile, o.keyFile = cert, key
	if n.nginxSecure, err = startNginx(o); err != nil {
		return n, nil, err
	}
	cleanup = append(cleanup, n.nginxSecure.stop)
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return n, nil, err
	}
	if n.goPlain, err = startTrivial(d); err != nil {
		return n, nil, err
	}
	cleanup = append(cleanup, n.goPlain.close)
	if n.goSecure, err = startTrivialTLS(d, &pair); err != nil {
		return n, nil, err
	}
	cleanup = append(cleanup, n.goSecure.close)
	return n, stop, nil
}

// negotiated names the TLS version and cipher suite a client of g (HTTPS)
// gets.
func negotiated(g *granaryProc) (string, error) {
	resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: g.roots}}}).Get(g.endpoint() + "/healthz")
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	if resp.TLS == nil {
		return "", errors.New("the HTTPS node answered without TLS")
	}
	return tls.VersionName(resp.TLS.Version) + ", " + tls.CipherSuiteName(resp.TLS.CipherSuite), nil
}

// tlsTargets are the rows' targets: each node read signed and unsigned,
// each nginx and trivial server unsigned.
func tlsTargets(n tlsNodes) map[[2]string]target {
	t := map[[2]string]target{}
	for proto, g := range map[string]*granaryProc{protoHTTP: n.plain, protoHTTPS: n.secure} {
		t[[2]string{proto, clientSigned}] = target{name: proto + " " + clientSigned, endpoint: g.endpoint(),
			access: granaryAccess, secret: granarySecret, roots: g.roots}
		t[[2]string{proto, clientUnsigned}] = target{name: proto + " " + clientUnsigned, endpoint: g.endpoint(),
			anonymous: true, roots: g.roots}
	}
	for proto, ngx := range map[string]*nginxProc{protoNginxHTTP: n.nginxPlain, protoNginxHTTPS: n.nginxSecure} {
		t[[2]string{proto, clientUnsigned}] = target{name: proto, endpoint: ngx.endpoint(), anonymous: true,
			roots: n.secure.roots}
	}
	for proto, g := range map[string]*trivialServer{protoGoHTTP: n.goPlain, protoGoHTTPS: n.goSecure} {
		t[[2]string{proto, clientUnsigned}] = target{name: proto, endpoint: g.endpoint(), anonymous: true,
			roots: n.secure.roots}
	}
	return t
}

// tlsProtos are the targets in the order of even rounds; odd rounds
// reverse it.
var tlsProtos = []string{protoHTTP, protoHTTPS, protoNginxHTTP, protoNginxHTTPS, protoGoHTTP, protoGoHTTPS}

// measureTLS warms every target (every object read once through each
// node, then their cache fills settled; through each nginx until it
// answers every read from its cache) and every client's connections (so
// no measured pass pays for a handshake), and measures every row, rounds
// times on each target, alternating the order. A measured nginx read
// that was not a cache hit fails the run.
func measureTLS(ctx context.Context, d *dataset, n tlsNodes, rep *tlsReport, logf func(string, ...any)) error {
	targets := tlsTargets(n)
	clients := map[[2]string]*client{}
	for k, t := range targets {
		clients[k] = newClient(t, d.bucket, rep.plan.conc)
		defer clients[k].close()
	}
	if err := warmTLSTargets(ctx, d, n, clients); err != nil {
		return err
	}
	var ngx []*client
	for _, proto := range []string{protoNginxHTTP, protoNginxHTTPS} {
		ngx = append(ngx, clients[[2]string{proto, clientUnsigned}])
	}
	_, missesBefore := cacheStatuses(ngx)
	for round := range rep.plan.rounds {
		order := slices.Clone(tlsProtos)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		if err := measureRound(ctx, d, clients, order, round, rep, logf); err != nil {
			return err
		}
	}
	if _, misses := cacheStatuses(ngx); misses != missesBefore {
		return fmt.Errorf("nginx answered %d measured reads from the origin, not its cache", misses-missesBefore)
	}
	return nil
}

// warmTLSTargets reads every object through each node and nginx, and
// opens every client's connections.
func warmTLSTargets(ctx context.Context, d *dataset, n tlsNodes, clients map[[2]string]*client) error {
	for _, proto := range []string{protoGoHTTP, protoGoHTTPS} {
		if _, err := runSmall(ctx, clients[[2]string{proto, clientUnsigned}], d.sets[0], proto+" connections"); err != nil {
			return err
		}
	}
	for _, proto := range []string{protoHTTP, protoHTTPS} {
		if err := readAll(ctx, d, clients[[2]string{proto, clientSigned}], proto+" warm-up"); err != nil {
			return err
		}
		// The unsigned client's pool: conc connections, opened by a pass.
		if _, err := runSmall(ctx, clients[[2]string{proto, clientUnsigned}], d.sets[0], proto+" connections"); err != nil {
			return err
		}
	}
	for _, g := range []*granaryProc{n.plain, n.secure} {
		if _, err := g.awaitIdle(ctx, 5*time.Minute); err != nil {
			return err
		}
	}
	for _, proto := range []string{protoNginxHTTP, protoNginxHTTPS} {
		cl := clients[[2]string{proto, clientUnsigned}]
		// The first pass fills the cache; the second must be all hits.
		for pass := range 2 {
			_, before := cacheStatuses([]*client{cl})
			if err := readAll(ctx, d, cl, proto+" warm-up"); err != nil {
				return err
			}
			if _, after := cacheStatuses([]*client{cl}); pass == 1 && after != before {
				return fmt.Errorf("%s: %d reads of a warm pass missed its cache", proto, after-before)
			}
		}
	}
	return nil
}

// cacheStatuses sums the cache hits and other cache statuses (misses,
// expired, ...) the clients saw.
func cacheStatuses(cls []*client) (hits, others int64) {
	for _, cl := range cls {
		h, o := cl.cacheHits()
		hits, others = hits+h, others+o
	}
	return hits, others
}

// readAll reads every object of d once through cl, unmeasured.
func readAll(ctx context.Context, d *dataset, cl *client, label string) error {
	for _, set := range d.sets {
		if _, err := runSmall(ctx, cl, set, label); err != nil {
			return err
		}
	}
	for _, obj := range d.large {
		if _, err := runLarge(ctx, cl, obj, 1, label); err != nil {
			return err
		}
	}
	return nil
}

// measureRound measures each row once on each target, in order: small
// sets signed and unsigned (nginx and Go unsigned only), and the large stream,
// signed where the target takes signatures.
func measureRound(ctx context.Context, d *dataset, clients map[[2]string]*client, order []string, round int, rep *tlsReport, logf func(string, ...any)) error {
	for _, set := range d.sets {
		for _, mode := range []string{clientSigned, clientUnsigned} {
			for _, proto := range order {
				cl := clients[[2]string{proto, mode}]
				if cl == nil {
					continue
				}
				r, err := runSmall(ctx, cl, set, proto+" "+mode)
				if err != nil {
					return err
				}
				row := tlsRow{read: smallRead(set), client: mode, proto: proto, round: round,
					rate: r.opsPerSec(), p50: r.p50, p99: r.p99, bytes: int64(r.n * set.size)}
				logf("round %d: %s, %s over %s: %.0f GET/s, p50 %v", round+1, row.read, mode, proto, row.rate, r.p50.Round(time.Microsecond))
				rep.rows = append(rep.rows, row)
			}
		}
	}
	for _, obj := range d.large {
		for _, proto := range order {
			mode := clientSigned
			if clients[[2]string{proto, mode}] == nil {
				mode = clientUnsigned
			}
			r, err := runLarge(ctx, clients[[2]string{proto, mode}], obj, 1, proto)
			if err != nil {
				return err
			}
			row := tlsRow{read: largeRead(obj), client: mode, proto: proto, round: round, large: true,
				rate: r.mbPerSec(), bytes: r.bytes}
			logf("round %d: %s over %s: %.0f MB/s", round+1, row.read, proto, row.rate)
			rep.rows = append(rep.rows, row)
		}
	}
	return nil
}

// aesGCMRates measures AES-128-GCM on one core of this machine, in MB/s
// of 16 KiB records sealed (what a server does to every byte it sends)
// and opened (what its client does): the cipher's share of a CPU-bound
// HTTPS transfer.
func aesGCMRates() (seal, open float64) {
	block, err := aes.NewCipher(make([]byte, 16))
	if err != nil {
		panic(err) // a 16-byte key is always valid
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	nonce, record := make([]byte, gcm.NonceSize()), make([]byte, 16<<10)
	sealed := gcm.Seal(nil, nonce, record, nil)
	out := make([]byte, 0, len(sealed))
	rate := func(op func()) float64 {
		const span = 200 * time.Millisecond
		n, start := 0, time.Now()
		for ; time.Since(start) < span; n++ {
			op()
		}
		return float64(n*len(record)) / time.Since(start).Seconds() / 1e6
	}
	seal = rate(func() { out = gcm.Seal(out[:0], nonce, record, nil) })
	open = rate(func() { out, err = gcm.Open(out[:0], nonce, sealed, nil) })
	if err != nil {
		panic(err)
	}
	return seal, open
}

func smallRead(set objectSet) string {
	return fmt.Sprintf("%d x %s, c=%d", len(set.objects), set.name, set.conc)
}

func largeRead(obj object) string { return sizeName(int64(len(obj.data))) + ", one stream" }
