// Package testcerts makes what TLS tests (and the load test's HTTPS
// node) need: a CA, and certificates it signs for loopback, written as
// PEM files.
package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA signs leaf certificates; File is its certificate, PEM.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	File string
}

// NewCA makes a CA and writes its certificate under a temporary
// directory.
func NewCA(t testing.TB) *CA {
	t.Helper()
	ca, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// New makes a CA, valid for a day, and writes its certificate to
// dir/ca.pem.
func New(dir string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "granary test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	ca := &CA{cert: cert, key: key, File: filepath.Join(dir, "ca.pem")}
	return ca, writePEM(ca.File, "CERTIFICATE", der)
}

// Pool is a pool holding only the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// Leaf is WriteLeaf, failing t on an error.
func (ca *CA) Leaf(t testing.TB, certFile, keyFile string) *big.Int {
	t.Helper()
	n, err := ca.WriteLeaf(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// WriteLeaf writes a certificate for 127.0.0.1 and localhost (server and
// client use) and its key to certFile and keyFile, replacing them as a
// rotation does (a new file renamed over the old, the key first), and
// returns its serial number.
func (ca *CA) WriteLeaf(certFile, keyFile string) (*big.Int, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "granary test node"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := writePEM(keyFile, "EC PRIVATE KEY", kder); err != nil {
		return nil, err
	}
	return tmpl.SerialNumber, writePEM(certFile, "CERTIFICATE", der)
}

// serial is a random serial number; crypto/rand does not fail.
func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

// writePEM writes one PEM block to path through a temporary file renamed
// over it, so a reader never sees half of it.
func writePEM(path, typ string, der []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("testcerts: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("testcerts: %w", err)
	}
	return nil
}
