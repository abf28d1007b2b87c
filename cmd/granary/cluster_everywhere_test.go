// A prefix every member owns, through real processes: three nodes whose
// configuration names an everywhere prefix read an object under it from
// the origin once in all; read through one node, it lands in every
// node's RAM tier, and the others serve it from there, without a hop.
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
	if got := getAll(t, nodeClient(t, r.env, r.addrs[0]), "set", "shared/val.bin"); !bytes.Equal(got, data) {
		t.Fatalf("through node 1: %d bytes, want the %d written", len(got), len(data))
	}
	// Read through one node, it is placed on every node.
	for i, addr := range r.addrs {
		poll.Until(t, fmt.Sprintf("node %d holding the object in RAM", i+1), func() bool {
			return metric(t, addr, "granary_tier_used_bytes", `tier="ram"`) >= float64(len(data))
		})
	}
	hops := func() (n float64) {
		for _, addr := range r.addrs {
			n += metric(t, addr, "granary_peer_chunk_reads_total")
		}
		return n
	}
	first := hops()
	for i, addr := range r.addrs[1:] {
		if got := getAll(t, nodeClient(t, r.env, addr), "set", "shared/val.bin"); !bytes.Equal(got, data) {
			t.Fatalf("through node %d: %d bytes, want the %d written", i+2, len(got), len(data))
		}
	}
	if n := hops() - first; n != 0 {
		t.Errorf("reads through the other nodes read %v chunks from another node; each holds the object", n)
	}
	if got := r.originGets(t) - before; got != 4 {
		t.Fatalf("the cluster read the origin %d times for the object's 4 chunks; want each once", got)
	}
}
