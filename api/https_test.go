// HTTPS through the real server: an upload refused ahead of its body
// reaches boto3 as the S3 error it is, not as a broken TLS connection,
// and plain HTTP sent to the HTTPS port is told to use HTTPS.
package api

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/granary-dev/granary/access"
	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/internal/testcerts"
	"github.com/granary-dev/granary/store"
)

// newTLSEnv serves a directory origin over HTTPS with a certificate of a
// fresh CA; it returns the env (whose client speaks HTTPS) and the CA's
// PEM file, for clients to verify the server with.
func newTLSEnv(t *testing.T, opts ...envOption) (*env, string) {
	t.Helper()
	return newTLSEnvRAM(t, nil, opts...)
}

// newTLSEnvRAM is newTLSEnv with tier as the engine's RAM tier.
func newTLSEnvRAM(t *testing.T, tier store.Tier, opts ...envOption) (*env, string) {
	t.Helper()
	ca := testcerts.NewCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "node.crt"), filepath.Join(dir, "node.key")
	ca.Leaf(t, certFile, keyFile)
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	origin, root := openFS(t)
	opts = append(opts, func(o *nodeOptions) { o.TLS = &tls.Config{Certificates: []tls.Certificate{pair}} })
	e := newEnvOver(t, gateway.Options{Origin: origin, RAM: tier}, root, nil, opts...)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}}
	t.Cleanup(tr.CloseIdleConnections)
	awaitReadyOver(t, &http.Client{Transport: tr, Timeout: time.Minute}, "https://"+e.addr+"/healthz")
	e.client, err = minio.New(e.addr, &minio.Options{
		Creds: credentials.NewStaticV4(testAccess, testSecret, ""), Region: testRegion,
		Secure: true, Transport: tr,
	})
	if err != nil {
		t.Fatal(err)
	}
	return e, ca.File
}

// refusedPutsScript PUTs a 1 MB body six times with boto3 (which sends
// Expect: 100-continue) over HTTPS, each on a fresh connection, and
// prints one line per try: "refused CODE" for an S3 error, "broken
// KIND: ..." for a failure of the connection, "accepted" otherwise.
const refusedPutsScript = `
import sys, boto3, botocore
from botocore.config import Config
endpoint, ca, key, secret, bucket = sys.argv[1:6]
body = b"x" * 1000000
for i in range(6):
    s3 = boto3.client("s3", endpoint_url=endpoint, verify=ca, region_name="us-east-1",
        aws_access_key_id=key, aws_secret_access_key=secret,
        config=Config(retries={"max_attempts": 1, "mode": "standard"}, s3={"addressing_style": "path"}))
    try:
        s3.put_object(Bucket=bucket, Key="refused-%d" % i, Body=body)
        print("accepted", flush=True)
    except botocore.exceptions.ClientError as e:
        print("refused", e.response["Error"]["Code"], flush=True)
    except Exception as e:
        print("broken", type(e).__name__ + ":", str(e).replace("\n", " "), flush=True)
`

// TestTLSRefusedUploadIsAnAnswer: a PUT refused before its body was read
// (a wrong secret, a key that may not write there) reaches boto3 over
// HTTPS as the S3 error, every time. Closing such a connection at once
// made the kernel reset it under the client's body, which its TLS stack
// reported as "EOF occurred in violation of protocol".
func TestTLSRefusedUploadIsAnAnswer(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 not found (make deps installs it)")
	}
	reg := accessForTest()
	e, caFile := newTLSEnv(t, func(o *nodeOptions) { o.Access = reg })
	bucket := e.makeBucket(t, "refused")
	grants := []access.Grant{{Bucket: bucket, Actions: access.Read | access.List}}
	if err := reg.SetUsers([]access.User{{AccessKey: trainerKey, Secret: trainerSecret, Grants: grants}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what, key, secret, code string
	}{
		{"a wrong secret", testAccess, "not-the-secret-key", "SignatureDoesNotMatch"},
		{"a read-only key", trainerKey, trainerSecret, "AccessDenied"},
	} {
		out, err := exec.Command(py, "-c", refusedPutsScript, "https://"+e.addr, caFile, c.key, c.secret, bucket).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: boto3: %v\n%s", c.what, err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != 6 {
			t.Fatalf("%s: want 6 tries, got:\n%s", c.what, out)
		}
		for i, l := range lines {
			if l != "refused "+c.code {
				t.Errorf("%s, try %d: %s (want refused %s)", c.what, i+1, l, c.code)
			}
		}
	}
}

// TestPlainHTTPToTLSPort: a plain HTTP request sent to the HTTPS port is
// answered 400 in plain HTTP, saying to use HTTPS, as nginx does, rather
// than closed without a word; the port still serves HTTPS.
func TestPlainHTTPToTLSPort(t *testing.T) {
	e, _ := newTLSEnv(t)
	for _, req := range []string{
		"GET / HTTP/1.1\r\nHost: " + e.addr + "\r\n\r\n",
		"PUT /b/k HTTP/1.1\r\nHost: " + e.addr + "\r\nContent-Length: 100000\r\n\r\n" + strings.Repeat("x", 100000),
	} {
		conn, err := net.Dial("tcp", e.addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(time.Minute))
		go func() { _, _ = io.WriteString(conn, req) }() // the server may answer before reading it all
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			conn.Close()
			t.Fatalf("%q: %v", req[:20], err)
		}
		body, err := io.ReadAll(resp.Body)
		conn.Close()
		if err != nil {
			t.Fatalf("%q: body: %v", req[:20], err)
		}
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "plain HTTP request was sent to HTTPS port") {
			t.Errorf("%q: %d %q, want 400 saying to use HTTPS", req[:20], resp.StatusCode, body)
		}
		if !resp.Close {
			t.Errorf("%q: the answer does not close the connection", req[:20])
		}
	}
	// HTTPS still works on the port.
	if _, err := e.client.ListBuckets(t.Context()); err != nil {
		t.Fatal(err)
	}
}
