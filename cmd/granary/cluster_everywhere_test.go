// A prefix every member owns, through real processes: three nodes whose
// configuration names an everywhere prefix read an object under it from
// the origin once in all, and each node that read it holds it in its own
// RAM tier and serves it from there, without another hop.
package main

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/internal/poll"
)

func TestClusterEverywherePrefixIsHeldByEveryNode(t *testing.T) {
	mio := miniotest.StartT(t)
	conf := writeFile(t, t.TempDir(), "granary.yaml", "buckets:\n  set:\n    everywhere:\n      - shared/\n")
	r := startCluster(t, mio, "s3://"+mio.Endpoint+"?secure=false", 3, "--config", conf, "--chunk-size", "256KiB")
	ctx := context.Background()
	direct := directClient(t, mio)
	if err := direct.MakeBucket(ctx, "set", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	data := randomBytes(7, 3*256<<10+1000) // 4 chunks
	if _, err := direct.PutObject(ctx, "set", "shared/val.bin", bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	before := r.originGets(t)
	readEach := func() {
		t.Helper()
		for i, addr := range r.addrs {
			if got := getAll(t, nodeClient(t, r.env, addr), "set", "shared/val.bin"); !bytes.Equal(got, data) {
				t.Fatalf("through node %d: %d bytes, want the %d written", i+1, len(got), len(data))
			}
		}
	}
	hops := func() float64 {
		n := 0.0
		for _, addr := range r.addrs {
			n += metric(t, addr, "granary_peer_chunk_reads_total")
		}
		return n
	}
	readEach()
	for i, addr := range r.addrs {
		poll.Until(t, fmt.Sprintf("node %d holding the object in RAM", i+1), func() bool {
			return metric(t, addr, "granary_tier_used_bytes", `tier="ram"`) >= float64(len(data))
		})
	}
	first := hops()
	readEach()
	if n := hops() - first; n != 0 {
		t.Errorf("a second read through every node read %v chunks from another node; each holds the object", n)
	}
	if got := r.originGets(t) - before; got != 4 {
		t.Fatalf("the cluster read the origin %d times for the object's 4 chunks; want each once", got)
	}
}
