// The cluster behind an on-path attacker: members reach each other
// through proxies that flip a byte of every chunk answer. No node serves
// the changed bytes, then or later.
package main

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/internal/faultproxy"
	"github.com/granary-dev/granary/internal/miniotest"
)

// TestClusterTamperedPeerAnswers: a first read of a 7-chunk object
// through each of three nodes, every answer of a member to another
// carrying a chunk flipped on the way: each GET returns the object's
// bytes (a node refuses the changed answers and reads on from the
// origin), never others; once the tampering stops, reads through every
// node return them again (no node kept a changed hot copy).
func TestClusterTamperedPeerAnswers(t *testing.T) {
	mio := miniotest.StartT(t)
	var proxies []*faultproxy.Proxy
	via := func(addr string) string {
		p, err := faultproxy.Start(addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		proxies = append(proxies, p)
		return p.Addr()
	}
	r := startClusterVia(t, mio, "s3://"+mio.Endpoint+"?secure=false", 3, nil, via, "--chunk-size", "1MiB")
	ctx := context.Background()
	direct := directClient(t, mio)
	if err := direct.MakeBucket(ctx, "data", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	data := randomBytes(30, 6<<20+123)
	if _, err := direct.PutObject(ctx, "data", "ckpt", bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	setProxies := func(m faultproxy.Mode) {
		for _, p := range proxies {
			if err := p.Set(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	readAll := func(when string) {
		t.Helper()
		for i, addr := range r.addrs {
			obj, err := nodeClient(t, r.env, addr).GetObject(ctx, "data", "ckpt", minio.GetObjectOptions{})
			if err != nil {
				t.Fatalf("%s, node %d: %v", when, i+1, err)
			}
			got, err := io.ReadAll(obj)
			obj.Close()
			if err != nil {
				t.Fatalf("%s, node %d: the read failed: %v", when, i+1, err)
			}
			if !bytes.Equal(got, data) {
				t.Errorf("%s, node %d served %d bytes other than the object's (%d)", when, i+1, len(got), len(data))
			}
		}
	}
	setProxies(faultproxy.FlipBodies)
	readAll("tampered")
	flipped := int64(0)
	for _, p := range proxies {
		flipped += p.Flipped()
	}
	if flipped == 0 {
		t.Fatal("no chunk answer went through a proxy: the test proved nothing")
	}
	setProxies(faultproxy.Forward)
	readAll("after the tampering")
}
