// HTTPS end to end: a node serving TLS to minio-go with a private CA, a
// certificate rotated in place under open connections, and a cluster
// whose members speak HTTPS to each other.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/cluster"
	"github.com/granary-dev/granary/cluster/peer"
	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/internal/testcerts"
)

// tlsFiles are a node's pair, signed by ca.
type tlsFiles struct {
	ca        *testcerts.CA
	cert, key string
}

func newTLSFiles(t *testing.T) tlsFiles {
	dir := t.TempDir()
	f := tlsFiles{ca: testcerts.NewCA(t), cert: filepath.Join(dir, "tls.crt"), key: filepath.Join(dir, "tls.key")}
	f.ca.Leaf(t, f.cert, f.key)
	return f
}

// verifies reports whether pool verifies the certificate in the PEM
// file certFile (for any use).
func verifies(t *testing.T, pool *x509.CertPool, certFile string) bool {
	t.Helper()
	pemBytes, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		t.Fatalf("%s: no PEM block", certFile)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	return err == nil
}

// httpsGet GETs url over its own connection (tr's), verified against
// pool, and returns the serial of the certificate the node presented.
func httpsGet(t *testing.T, tr *http.Transport, url string) string {
	t.Helper()
	resp, err := (&http.Client{Transport: tr, Timeout: time.Minute}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body) // read whole: the connection is kept
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	return resp.TLS.PeerCertificates[0].SerialNumber.String()
}

// startTLSChild runs a node serving HTTPS with a fresh pair in front of
// a fresh MinIO, and returns it, its files and a client trusting its CA.
func startTLSChild(t *testing.T) (*child, tlsFiles, *minio.Client) {
	t.Helper()
	mio := miniotest.StartT(t)
	f := newTLSFiles(t)
	env := map[string]string{
		"GRANARY_ACCESS_KEY": "tls-access", "GRANARY_SECRET_KEY": "tls-secret-key",
		"GRANARY_ORIGIN_ACCESS_KEY": mio.AccessKey, "GRANARY_ORIGIN_SECRET_KEY": mio.SecretKey,
		"GRANARY_DATA_DIR": t.TempDir(), "GRANARY_CA_FILE": f.ca.File,
	}
	n := startChild(t, env, "--origin", "s3://"+mio.Endpoint+"?secure=false", "--tls-cert", f.cert, "--tls-key", f.key)
	cl, err := (&clientFlags{endpoint: "https://" + n.addr}).Client(envMap(env))
	if err != nil {
		t.Fatal(err)
	}
	return n, f, cl
}

func TestServeTLS(t *testing.T) {
	n, f, cl := startTLSChild(t)
	if !bytes.Contains([]byte(n.stderr.String()), []byte("serving S3 at https://")) {
		t.Fatalf("the banner does not say https:\n%s", n.stderr.String())
	}
	ctx := context.Background()
	if err := cl.MakeBucket(ctx, "secure", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	data := randomBytes(7, 3<<20)
	if _, err := cl.PutObject(ctx, "secure", "obj", bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := getAll(t, cl, "secure", "obj"); !bytes.Equal(got, data) {
		t.Fatal("the object read over HTTPS differs")
	}
	checkLocationIsHTTPS(t, cl, "https://"+n.addr)
	// Without the CA the node is not trusted; in plain HTTP it answers
	// nothing a client could take for S3.
	noCA := map[string]string{"GRANARY_ACCESS_KEY": "tls-access", "GRANARY_SECRET_KEY": "tls-secret-key"}
	untrusted, err := (&clientFlags{endpoint: "https://" + n.addr}).Client(envMap(noCA))
	if err != nil {
		t.Fatal(err)
	}
	var unknown x509.UnknownAuthorityError
	if _, err := untrusted.BucketExists(ctx, "secure"); !errors.As(err, &unknown) {
		t.Fatalf("a client without the CA: %v, want an unknown authority", err)
	}
	clientCommandsTrustCAFile(t, "https://"+n.addr, f.ca.File, noCA)
	if resp, err := http.Get("http://" + n.addr + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP was answered 200 on the TLS port")
		}
	}

	// Rotation: a connection opened before keeps working on the old
	// certificate; a new one gets the new certificate.
	old := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.ca.Pool()}, MaxConnsPerHost: 1}
	defer old.CloseIdleConnections()
	url := "https://" + n.addr + "/healthz"
	first := httpsGet(t, old, url)
	rotated := f.ca.Leaf(t, f.cert, f.key).String()
	fresh := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.ca.Pool()}, DisableKeepAlives: true}
	if got := httpsGet(t, fresh, url); got != rotated {
		t.Fatalf("a new connection after the rotation got certificate %s, want %s (the old one was %s)", got, rotated, first)
	}
	if got := httpsGet(t, old, url); got != first {
		t.Fatalf("the open connection answered with certificate %s, want the one it opened with, %s", got, first)
	}
	// A rotation half written (a key without its certificate) keeps the
	// last good pair in service.
	testcerts.NewCA(t).Leaf(t, filepath.Join(t.TempDir(), "other.crt"), f.key)
	if got := httpsGet(t, fresh, url); got != rotated {
		t.Fatalf("after a mismatched key: certificate %s, want %s still", got, rotated)
	}
}

// checkLocationIsHTTPS completes a multipart upload through cl (a
// client of the node at endpoint) and checks the Location answered names
// the scheme the client used.
func checkLocationIsHTTPS(t *testing.T, cl *minio.Client, endpoint string) {
	t.Helper()
	ctx := context.Background()
	core := &minio.Core{Client: cl}
	id, err := core.NewMultipartUpload(ctx, "secure", "parts", minio.PutObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	part, err := core.PutObjectPart(ctx, "secure", "parts", id, 1, bytes.NewReader([]byte("one part")), 8, minio.PutObjectPartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	info, err := core.CompleteMultipartUpload(ctx, "secure", "parts", id, []minio.CompletePart{{PartNumber: 1, ETag: part.ETag}}, minio.PutObjectOptions{})
	if want := endpoint + "/secure/parts"; err != nil || info.Location != want {
		t.Fatalf("completed upload: Location %q, %v; want %q", info.Location, err, want)
	}
}

// clientCommandsTrustCAFile runs client commands against the HTTPS node
// at endpoint with env, which names no CA: with --ca-file caFile each
// succeeds; without it each fails on the certificate.
func clientCommandsTrustCAFile(t *testing.T, endpoint, caFile string, env map[string]string) {
	t.Helper()
	for _, args := range [][]string{{"version"}, {"status"}, {"pin", "--list"}} {
		args = append(args, "--endpoint", endpoint)
		var out bytes.Buffer
		if code := execute(context.Background(), append(args, "--ca-file", caFile), &out, &out, envMap(env)); code != exitOK {
			t.Errorf("%q --ca-file: exit %d:\n%s", args, code, out.String())
		}
		out.Reset()
		code := execute(context.Background(), args, &out, &out, envMap(env))
		if code != exitFailure || !strings.Contains(out.String(), "certificate signed by unknown authority") {
			t.Errorf("%q without a CA: exit %d, want %d and an unknown authority:\n%s", args, code, exitFailure, out.String())
		}
	}
}

// TestMountOverTLS mounts a bucket of a node serving HTTPS, trusting its
// CA with --ca-file alone (no GRANARY_CA_FILE), and reads it back.
func TestMountOverTLS(t *testing.T) {
	needFUSE(t)
	mio := miniotest.StartT(t)
	f := newTLSFiles(t)
	env := map[string]string{
		"GRANARY_ACCESS_KEY": "mount-tls-access", "GRANARY_SECRET_KEY": "mount-tls-secret",
		"GRANARY_ORIGIN_ACCESS_KEY": mio.AccessKey, "GRANARY_ORIGIN_SECRET_KEY": mio.SecretKey,
		"GRANARY_DATA_DIR": t.TempDir(),
	}
	node := startChild(t, env, "--origin", "s3://"+mio.Endpoint+"?secure=false", "--ram", "64MiB", "--disk", "0",
		"--tls-cert", f.cert, "--tls-key", f.key)
	endpoint := "https://" + node.addr
	clientEnv := map[string]string{"GRANARY_ACCESS_KEY": env["GRANARY_ACCESS_KEY"], "GRANARY_SECRET_KEY": env["GRANARY_SECRET_KEY"]}
	cl, err := (&clientFlags{endpoint: endpoint, caFile: f.ca.File}).Client(envMap(clientEnv))
	if err != nil {
		t.Fatal(err)
	}
	sums := seed(t, cl, "data", "", seedSizes)
	// Without the CA the mount fails at once, on the certificate.
	untrusted := t.TempDir()
	m := spawnMount(t, clientEnv, untrusted, "--endpoint", endpoint, "data", untrusted)
	m.awaitExit(t, exitFailure, 30*time.Second)
	if !strings.Contains(m.stderr.String(), "certificate signed by unknown authority") {
		t.Errorf("a mount without the CA: no certificate error:\n%s", m.stderr.String())
	}
	dir := t.TempDir()
	m = spawnMount(t, clientEnv, dir, "--endpoint", endpoint, "--ca-file", f.ca.File, "--read-only", "data", dir)
	m.awaitMounted(t, 1)
	checkFiles(t, dir, sums)
	m.cmd.Process.Signal(syscall.SIGTERM)
	m.awaitExit(t, exitOK, 20*time.Second)
}

func TestClusterOverTLS(t *testing.T) {
	f := newTLSFiles(t)
	r := readThroughPeerOverTLS(t, f, 3)
	redirectsOverTLS(t, f, r)
}

// redirectsOverTLS: a member serving HTTPS redirects a GET that asks for
// owner routing to the owner's https address, where it is served.
func redirectsOverTLS(t *testing.T, f tlsFiles, cr *clusterRig) {
	t.Helper()
	r := newRouteRig(t, cr, &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.ca.Pool()}})
	direct := directClient(t, cr.mio)
	objs := map[string][]byte{}
	for i := range 9 {
		key := fmt.Sprintf("r%d", i)
		objs[key] = randomBytes(uint64(200+i), 100<<10)
		if _, err := direct.PutObject(context.Background(), "set", key, bytes.NewReader(objs[key]), 100<<10, minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	n1, moved := "https://"+r.addrs[0], 0
	for key, want := range objs {
		resp := r.get(t, n1, "set", key, map[string]string{routeHeader: "owner"})
		if r.owner("set", key, 0) == r.ids[0] {
			continue
		}
		body(t, resp, http.StatusTemporaryRedirect)
		loc := resp.Header.Get("Location")
		if !strings.HasPrefix(loc, "https://"+r.addrOf(t, r.owner("set", key, 0))+"/set/"+key) {
			t.Fatalf("%s: redirected to %q", key, loc)
		}
		u, _ := url.Parse(loc)
		if got := body(t, r.get(t, "https://"+u.Host, "set", key, nil), http.StatusOK); !bytes.Equal(got, want) {
			t.Fatalf("%s at its owner over HTTPS: wrong bytes", key)
		}
		moved++
	}
	if moved == 0 {
		t.Fatal("n1 owns all 9 objects: nothing was redirected")
	}
}

// TestClusterOverMutualTLS: members that present their certificates to
// each other read through each other while S3 clients present none; a
// peer call without a certificate is refused however well it is signed,
// and one with a certificate of another CA fails its handshake.
func TestClusterOverMutualTLS(t *testing.T) {
	f := newTLSFiles(t)
	r := readThroughPeerOverTLS(t, f, 2, "--peer-mtls")
	ctx := context.Background()
	n1 := cluster.Member{ID: r.ids[0], Addr: r.addrs[0]}
	member := peerClientPresenting(t, f, f.cert, f.key)
	if err := member.Ping(ctx, n1); err != nil {
		t.Fatalf("a signed call with the members' certificate: %v", err)
	}
	anonymous := peerClientPresenting(t, f, "", "")
	if err := anonymous.Ping(ctx, n1); !errors.Is(err, peer.ErrCertRequired) {
		t.Fatalf("a signed call without a certificate: %v, want %s", err, peer.CodeCertRequired)
	}
	if err := anonymous.Forget(ctx, n1, "set", "o0", nil); !errors.Is(err, peer.ErrCertRequired) {
		t.Fatalf("a signed forget without a certificate: %v, want %s", err, peer.CodeCertRequired)
	}
	other := newTLSFiles(t)
	if err := peerClientPresenting(t, f, other.cert, other.key).Ping(ctx, n1); err == nil {
		t.Fatal("a certificate of another CA was accepted")
	}
}

// peerClientPresenting is a peer client of member n2, with the cluster
// secret, that verifies the members against f's CA and presents the
// pair in cert and key ("": none).
func peerClientPresenting(t *testing.T, f tlsFiles, cert, key string) *peer.Client {
	t.Helper()
	tc := &tls.Config{RootCAs: f.ca.Pool()}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			t.Fatal(err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	c := peer.NewClient("n2", []byte(testClusterSecret), 0).WithTLS(tc)
	t.Cleanup(c.Close)
	return c
}

// readThroughPeerOverTLS starts a cluster of n nodes serving f's pair
// over HTTPS (extra flags added), reads objects through every node with
// S3 clients that present no certificate, and checks that every node but
// the first read chunks from its peers over HTTPS without a peer error.
func readThroughPeerOverTLS(t *testing.T, f tlsFiles, n int, extra ...string) *clusterRig {
	t.Helper()
	mio := miniotest.StartT(t)
	r := startClusterWith(t, mio, "s3://"+mio.Endpoint+"?secure=false", n,
		map[string]string{"GRANARY_CA_FILE": f.ca.File},
		append([]string{"--tls-cert", f.cert, "--tls-key", f.key, "--peer-ca-file", f.ca.File, "--chunk-size", "256KiB"}, extra...)...)
	ctx := context.Background()
	env := envMap(r.env)
	clients := make([]*minio.Client, n)
	for i := range clients {
		waitMembersAt(t, "https://"+r.addrs[i], r.env, n)
		cl, err := (&clientFlags{endpoint: "https://" + r.addrs[i]}).Client(env)
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = cl
	}
	// Written at the origin, so that no node holds them yet (written
	// through a node, they would be placed on their owners).
	direct := directClient(t, mio)
	if err := direct.MakeBucket(ctx, "set", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	objs := make([][]byte, 8)
	for i := range objs {
		objs[i] = randomBytes(uint64(90+i), 600<<10) // 3 chunks
		if _, err := direct.PutObject(ctx, "set", fmt.Sprintf("o%d", i), bytes.NewReader(objs[i]), int64(len(objs[i])), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range objs { // the first fills what it owns; the others then ask their peers
		for _, cl := range clients {
			if !bytes.Equal(getAll(t, cl, "set", fmt.Sprintf("o%d", i)), objs[i]) {
				t.Fatalf("o%d read through a node differs", i)
			}
		}
	}
	for i := 1; i < n; i++ {
		node, err := (&clientFlags{endpoint: "https://" + r.addrs[i]}).Remote(env)
		if err != nil {
			t.Fatal(err)
		}
		tr := node.transport()
		reads := metricOver(t, tr, "https://"+r.addrs[i], "granary_peer_chunk_reads_total")
		errs := metricOver(t, tr, "https://"+r.addrs[i], "granary_peer_errors_total")
		if reads == 0 || errs != 0 {
			t.Fatalf("node %d read %v chunks from its peers over HTTPS, with %v peer errors", i+1, reads, errs)
		}
	}
	return r
}

// TestOriginOverTLS: a node in front of MinIO serving HTTPS with a
// private CA reads and writes through it with --origin-ca-file; without
// it, the node says at start that the origin's certificate is not
// trusted, and a read fails at once with 503, its cause in the log.
func TestOriginOverTLS(t *testing.T) {
	ca := testcerts.NewCA(t)
	certs := t.TempDir()
	ca.Leaf(t, filepath.Join(certs, "public.crt"), filepath.Join(certs, "private.key"))
	mio := miniotest.StartTWith(t, miniotest.Options{CertsDir: certs, RootCAs: ca.Pool()})
	origin := "s3://" + mio.Endpoint // secure unless told otherwise
	env := map[string]string{
		"GRANARY_ACCESS_KEY": "origin-tls-access", "GRANARY_SECRET_KEY": "origin-tls-secret",
		"GRANARY_ORIGIN_ACCESS_KEY": mio.AccessKey, "GRANARY_ORIGIN_SECRET_KEY": mio.SecretKey,
		"GRANARY_DATA_DIR": t.TempDir(),
	}
	n := startChild(t, env, "--origin", origin, "--origin-ca-file", ca.File)
	clientEnv := map[string]string{"GRANARY_ACCESS_KEY": env["GRANARY_ACCESS_KEY"], "GRANARY_SECRET_KEY": env["GRANARY_SECRET_KEY"]}
	node, err := newS3Client("http://"+n.addr, envMap(clientEnv))
	if err != nil {
		t.Fatal(err)
	}
	direct, err := (&clientFlags{endpoint: mio.URL(), caFile: ca.File}).Client(envMap(minioEnv(mio)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := node.MakeBucket(ctx, "tls-origin", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	written, atOrigin := randomBytes(31, 2<<20+5), randomBytes(32, 3<<20+7)
	if _, err := node.PutObject(ctx, "tls-origin", "written", bytes.NewReader(written), int64(len(written)), minio.PutObjectOptions{}); err != nil {
		t.Fatalf("write through to an https origin: %v", err)
	}
	if !bytes.Equal(getAll(t, direct, "tls-origin", "written"), written) {
		t.Fatal("the origin holds other bytes than were written through the node")
	}
	if _, err := direct.PutObject(ctx, "tls-origin", "read", bytes.NewReader(atOrigin), int64(len(atOrigin)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(getAll(t, node, "tls-origin", "read"), atOrigin) {
		t.Fatal("the object read through the node differs from the origin's")
	}
	untrustedOrigin(t, origin, env, clientEnv)
}

// untrustedOrigin starts a node in front of the https origin with env
// but no CA for it, and checks it reports the certificate at start, once
// (cause tls, naming --origin-ca-file), and answers a read with 503
// SlowDown at once: the start-up check opened the origin's breaker.
func untrustedOrigin(t *testing.T, origin string, env, clientEnv map[string]string) {
	t.Helper()
	env["GRANARY_DATA_DIR"] = t.TempDir()
	n := startChild(t, env, "--origin", origin)
	waitFor(t, 30*time.Second, "the start-up report of the origin's certificate", func() bool {
		log := n.stderr.String()
		return strings.Contains(log, "certificate signed by unknown authority") && strings.Contains(log, "--origin-ca-file")
	})
	if c := strings.Count(n.stderr.String(), `"message":"origin down: tls`); c != 1 {
		t.Fatalf("%d lines saying the origin is down for TLS, want 1:\n%s", c, n.stderr.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // bounds a hang
	defer cancel()
	_, err := adminCall(ctx, envMap(clientEnv), remote{url: "http://" + n.addr}, http.MethodGet, "/tls-origin/read", nil)
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "SlowDown") {
		t.Fatalf("a read through a node that does not trust its origin: %v, want 503 SlowDown", err)
	}
}
