// Tests of the client subcommands' shared --endpoint + environment helper.
package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/internal/miniotest"
)

// newS3Client is a minio-go client of endpoint, with the credentials
// and CA file of getenv, as a client command makes it.
func newS3Client(endpoint string, getenv Getenv) (*minio.Client, error) {
	return (&clientFlags{endpoint: endpoint}).Client(getenv)
}

func TestParseEndpoint(t *testing.T) {
	good := map[string]struct {
		host   string
		secure bool
	}{
		"http://127.0.0.1:9000":  {"127.0.0.1:9000", false},
		"http://127.0.0.1:9000/": {"127.0.0.1:9000", false},
		"https://granary.local":  {"granary.local", true},
		"http://[::1]:9000":      {"[::1]:9000", false},
	}
	for in, want := range good {
		host, secure, err := parseEndpoint(in)
		if err != nil || host != want.host || secure != want.secure {
			t.Errorf("parseEndpoint(%q) = %q %v %v", in, host, secure, err)
		}
	}
	for _, in := range []string{"", "127.0.0.1:9000", "ftp://h", "http://", "http://h/path", "http://h?x=1", "http://u:p@h", "s3://h:9000"} {
		if _, _, err := parseEndpoint(in); err == nil {
			t.Errorf("parseEndpoint(%q): want an error", in)
		}
	}
}

func TestClientFlagsEndpointPrecedence(t *testing.T) {
	var cf clientFlags
	if got, _ := cf.Endpoint(envMap(nil)); got != defaultEndpoint {
		t.Fatalf("default %q", got)
	}
	env := envMap(map[string]string{"GRANARY_ENDPOINT": "http://10.0.0.1:9000/"})
	if got, _ := cf.Endpoint(env); got != "http://10.0.0.1:9000" {
		t.Fatalf("env %q", got)
	}
	cf.endpoint = "https://node-2:9443"
	if got, _ := cf.Endpoint(env); got != "https://node-2:9443" {
		t.Fatalf("flag %q", got)
	}
	cf.endpoint = "node-2:9443"
	if _, err := cf.Endpoint(env); err == nil {
		t.Fatal("scheme-less endpoint accepted")
	}
}

// TestClientFlagsCAPrecedence: --ca-file beats GRANARY_CA_FILE, and a
// bad file is named with where it came from.
func TestClientFlagsCAPrecedence(t *testing.T) {
	f := newTLSFiles(t)
	missing := filepath.Join(t.TempDir(), "missing.pem")
	var cf clientFlags
	if pool, err := cf.CAs(envMap(nil)); pool != nil || err != nil {
		t.Fatalf("neither set: %v %v, want the system's pool (nil)", pool, err)
	}
	if pool, err := cf.CAs(envMap(map[string]string{"GRANARY_CA_FILE": f.ca.File})); err != nil || !verifies(t, pool, f.cert) {
		t.Fatalf("GRANARY_CA_FILE: %v; the pool does not verify the node", err)
	}
	if _, err := cf.CAs(envMap(map[string]string{"GRANARY_CA_FILE": missing})); err == nil || !strings.Contains(err.Error(), "GRANARY_CA_FILE") {
		t.Fatalf("a missing GRANARY_CA_FILE: %v", err)
	}
	cf.caFile = f.ca.File
	if pool, err := cf.CAs(envMap(map[string]string{"GRANARY_CA_FILE": missing})); err != nil || !verifies(t, pool, f.cert) {
		t.Fatalf("--ca-file over a missing GRANARY_CA_FILE: %v; the pool does not verify the node", err)
	}
	cf.caFile = missing
	if _, err := cf.CAs(envMap(map[string]string{"GRANARY_CA_FILE": f.ca.File})); err == nil || !strings.Contains(err.Error(), "--ca-file") {
		t.Fatalf("a missing --ca-file: %v", err)
	}
}

func TestClientNeedsCredentials(t *testing.T) {
	var cf clientFlags
	if _, err := cf.Client(envMap(map[string]string{"GRANARY_ACCESS_KEY": "A"})); err == nil || !strings.Contains(err.Error(), "GRANARY_SECRET_KEY") {
		t.Fatalf("missing secret: %v", err)
	}
}

// TestClientAgainstS3 uses the helper the way a subcommand does, against a
// real S3 server: the credentials and endpoint must reach the wire intact.
func TestClientAgainstS3(t *testing.T) {
	srv := miniotest.StartT(t)
	cf := clientFlags{endpoint: srv.URL()}
	cl, err := cf.Client(envMap(map[string]string{"GRANARY_ACCESS_KEY": srv.AccessKey, "GRANARY_SECRET_KEY": srv.SecretKey}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := cl.MakeBucket(ctx, "helper", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("granary "), 1000)
	if _, err := cl.PutObject(ctx, "helper", "k", bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	obj, err := cl.GetObject(ctx, "helper", "k", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(obj)
	obj.Close()
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("read back %d bytes, %v", len(got), err)
	}
	bad, err := cf.Client(envMap(map[string]string{"GRANARY_ACCESS_KEY": srv.AccessKey, "GRANARY_SECRET_KEY": "wrong"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.StatObject(ctx, "helper", "k", minio.StatObjectOptions{}); err == nil {
		t.Fatal("wrong secret accepted")
	}
}
