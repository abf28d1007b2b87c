// TLS: the node's certificate, loaded again when its files change
// (cert-manager rotates them in place) without touching open connections,
// and the CA pools clients, peers and the origin verify against.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// certFiles serves the key pair in cert and key, read again at a
// handshake when either file changed since the last read. A pair that
// does not load (a rotation half written) leaves the last good one in
// service.
type certFiles struct {
	cert, key string
	log       zerolog.Logger
	mu        sync.Mutex // guards pair and seen
	pair      *tls.Certificate
	seen      [2]fileStamp
}

// fileStamp is what says a file changed: a rotation renames a new file
// over the old (a new inode) or rewrites it (a new time or size).
type fileStamp struct {
	mod  time.Time
	size int64
	ino  uint64
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	st := fileStamp{mod: fi.ModTime(), size: fi.Size()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = sys.Ino
	}
	return st, nil
}

// loadCertFiles reads the pair once, failing if it does not load.
func loadCertFiles(cert, key string, log zerolog.Logger) (*certFiles, error) {
	f := &certFiles{cert: cert, key: key, log: log}
	if err := f.reload(); err != nil {
		return nil, err
	}
	return f, nil
}

// reload reads the pair if its files changed; mu must not be held.
func (f *certFiles) reload() error {
	cs, err1 := stampOf(f.cert)
	ks, err2 := stampOf(f.key)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pair != nil && f.seen == [2]fileStamp{cs, ks} {
		return nil
	}
	pair, err := tls.LoadX509KeyPair(f.cert, f.key)
	if err != nil {
		return fmt.Errorf("tls: %s and %s: %w", f.cert, f.key, err)
	}
	f.pair, f.seen = &pair, [2]fileStamp{cs, ks}
	return nil
}

// current is the pair in service, read again first if its files changed.
func (f *certFiles) current() *tls.Certificate {
	if err := f.reload(); err != nil {
		f.log.Warn().Err(err).Msg("TLS certificate not reloaded; serving the previous one")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pair
}

// GetCertificate is tls.Config's: the current pair, for a server.
func (f *certFiles) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return f.current(), nil
}

// GetClientCertificate is tls.Config's: the current pair, presented to
// a member that asks for one (mutual TLS).
func (f *certFiles) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return f.current(), nil
}

// serverTLS is the listener's TLS configuration over f: TLS 1.2 and up.
func serverTLS(f *certFiles) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: f.GetCertificate}
}

// caPool is the system's pool with the PEM certificates of file added;
// file "" means the system's pool alone.
func caPool(file string) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if file == "" {
		return pool, nil
	}
	return addPEM(pool, file)
}

// filePool is a pool of the PEM certificates of file alone.
func filePool(file string) (*x509.CertPool, error) {
	return addPEM(x509.NewCertPool(), file)
}

// addPEM adds the PEM certificates of file to pool, which must gain one.
func addPEM(pool *x509.CertPool, file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("CA file: %w", err)
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("CA file %s: no PEM certificate in it", file)
	}
	return pool, nil
}

// clientTLS verifies servers against the pool of caFile (see caPool).
func clientTLS(caFile string) (*tls.Config, error) {
	pool, err := caPool(caFile)
	if err != nil {
		return nil, err
	}
	return clientTLSConfig(pool), nil
}

// clientTLSConfig verifies servers against pool (nil: the system's), TLS
// 1.2 and up.
func clientTLSConfig(pool *x509.CertPool) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
}

// nodeCerts is the node's reloading pair, nil without --tls-cert: what
// it serves with and, with --peer-mtls, presents to its members.
func nodeCerts(cfg Config, log zerolog.Logger) (*certFiles, error) {
	if cfg.TLSCert == "" {
		return nil, nil
	}
	return loadCertFiles(cfg.TLSCert, cfg.TLSKey, log)
}

// nodeTLS is the node's serving TLS configuration over certs, nil
// without them. With --peer-mtls it asks every client for a certificate
// and verifies one given against the members' CA (the file alone, not
// the system's pool: a certificate any public CA signed must not pass
// for a member's); a client that gives none (an S3 client) is served
// as before, and the peer routes refuse it (api.PeerOptions).
func nodeTLS(cfg Config, certs *certFiles) (*tls.Config, error) {
	if certs == nil {
		return nil, nil
	}
	tc := serverTLS(certs)
	if cfg.PeerMTLS {
		members, err := filePool(cfg.PeerCAFile)
		if err != nil {
			return nil, fmt.Errorf("peer-ca-file: %w", err)
		}
		tc.ClientAuth, tc.ClientCAs = tls.VerifyClientCertIfGiven, members
	}
	return tc, nil
}

// peerTLS is what the peer client speaks HTTPS to members with: their
// certificates verified against --peer-ca-file (beside the system's
// pool) and, with --peer-mtls, certs presented (as they are at the
// handshake: a rotation applies to new connections).
func peerTLS(cfg Config, certs *certFiles) (*tls.Config, error) {
	tc, err := clientTLS(cfg.PeerCAFile)
	if err != nil {
		return nil, fmt.Errorf("peer-ca-file: %w", err)
	}
	if cfg.PeerMTLS {
		tc.GetClientCertificate = certs.GetClientCertificate
	}
	return tc, nil
}

// CAs is the pool client commands verify a node's HTTPS with: the
// system's and that of --ca-file, else of GRANARY_CA_FILE (see caPool);
// nil (the system's) when neither is set.
func (c *clientFlags) CAs(getenv Getenv) (*x509.CertPool, error) {
	file, from := c.caFile, "--ca-file"
	if file == "" {
		file, _ = getenv("GRANARY_CA_FILE")
		from = "GRANARY_CA_FILE"
	}
	if file == "" {
		return nil, nil
	}
	pool, err := caPool(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	return pool, nil
}
