// The cluster through real processes: three `granary serve` nodes on
// loopback in front of MinIO. Data written via one node is read via
// another; each chunk is read from the origin once across the cluster; a
// node killed in the middle of a large read costs the read nothing; a peer
// without the cluster secret is refused.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/api"
	"github.com/granary-dev/granary/cluster"
	"github.com/granary-dev/granary/cluster/peer"
	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/internal/slowproxy"
	"github.com/granary-dev/granary/ops"
	"github.com/granary-dev/granary/store"
)

func randomBytes(seed uint64, n int) []byte {
	b := make([]byte, n)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func TestClusterWritesReadsAndInvalidates(t *testing.T) {
	mio := miniotest.StartT(t)
	r := startCluster(t, mio, "s3://"+mio.Endpoint+"?secure=false", 3, "--chunk-size", "1MiB")
	ctx := context.Background()
	c1, c2, c3 := nodeClient(t, r.env, r.addrs[0]), nodeClient(t, r.env, r.addrs[1]), nodeClient(t, r.env, r.addrs[2])
	if err := c1.MakeBucket(ctx, "data", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	v1 := randomBytes(1, 3<<20+17)
	if _, err := c1.PutObject(ctx, "data", "model.bin", bytes.NewReader(v1), int64(len(v1)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	small := randomBytes(2, 5000)
	if _, err := c1.PutObject(ctx, "data", "small", bytes.NewReader(small), int64(len(small)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	// The write placed each chunk on two owners (written data gets
	// max(R, 2)), so node 3 reads it without the origin.
	waitFor(t, 30*time.Second, "every chunk of the written object on two owners", func() bool {
		owned, _ := ownedBytes(t, r, 0, "data", "model.bin", int64(len(v1)))
		return owned == 2*int64(len(v1))
	})
	gets := r.originGets(t)
	if got := getAll(t, c3, "data", "model.bin"); !bytes.Equal(got, v1) {
		t.Fatal("node 3 reads other bytes than node 1 wrote")
	}
	if r.originGets(t) != gets {
		t.Fatalf("reading a written object through node 3 read the origin %d times", r.originGets(t)-gets)
	}
	if got := getAll(t, c3, "data", "small"); !bytes.Equal(got, small) {
		t.Fatal("node 3 reads another small object than node 1 wrote")
	}
	// An overwrite through node 2 is what nodes 1 and 3 serve next, though
	// they cached the old version; read the moment the save returns, it
	// comes from node 2's local copy or the owners it filled, never from
	// the origin.
	v2 := randomBytes(3, 2<<20+5)
	if _, err := c2.PutObject(ctx, "data", "model.bin", bytes.NewReader(v2), int64(len(v2)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	gets = r.originGets(t)
	for i, c := range []*minio.Client{c1, c3} {
		if got := getAll(t, c, "data", "model.bin"); !bytes.Equal(got, v2) {
			t.Fatalf("node %d serves the old version after an overwrite through node 2", []int{1, 3}[i])
		}
	}
	if r.originGets(t) != gets {
		t.Fatalf("reading an object right after its save through another node read the origin %d times", r.originGets(t)-gets)
	}
	if err := c2.RemoveObject(ctx, "data", "small", minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*minio.Client{c1, c3} {
		_, err := c.StatObject(ctx, "data", "small", minio.StatObjectOptions{})
		if minio.ToErrorResponse(err).Code != "NoSuchKey" {
			t.Fatalf("a deleted object is still served: %v", err)
		}
	}
}

func TestClusterReadsEachChunkFromTheOriginOnce(t *testing.T) {
	mio := miniotest.StartT(t)
	r := startCluster(t, mio, "s3://"+mio.Endpoint+"?secure=false", 3, "--chunk-size", "256KiB")
	ctx := context.Background()
	direct := directClient(t, mio)
	if err := direct.MakeBucket(ctx, "set", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	// Written at the origin, not through the cluster: nothing is cached.
	const objects = 24
	data := make([][]byte, objects)
	chunks := 0
	for i := range objects {
		data[i] = randomBytes(uint64(10+i), 100<<10+i*37<<10) // 100 KiB .. ~950 KiB: 1-4 chunks
		chunks += (len(data[i]) + 256<<10 - 1) / (256 << 10)
		if _, err := direct.PutObject(ctx, "set", objectName(i), bytes.NewReader(data[i]), int64(len(data[i])), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	before := r.originGets(t)
	// Every object is read through every node at once, several times.
	var wg sync.WaitGroup
	errs := make(chan error, 3*objects*2)
	for n := range r.addrs {
		cl := nodeClient(t, r.env, r.addrs[n])
		for round := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range objects {
					i := (k*7 + n*5 + round*3) % objects
					if got := getAll(t, cl, "set", objectName(i)); sha256.Sum256(got) != sha256.Sum256(data[i]) {
						errs <- errors.New(objectName(i) + " read wrong")
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := r.originGets(t) - before; got != chunks {
		t.Fatalf("the cluster read the origin %d times for %d chunks (each read through 3 nodes, twice); want each chunk once", got, chunks)
	}
	// Metadata comes with the first chunk, from its owner: no HEADs.
	stats := 0.0
	for _, a := range r.addrs {
		stats += metric(t, a, "granary_origin_requests_total", `op="stat"`)
	}
	if stats != 0 {
		t.Fatalf("the cluster sent %v HEADs to the origin; the owners of first chunks answer them", stats)
	}
	if metric(t, r.addrs[0], "granary_peer_chunk_reads_total")+metric(t, r.addrs[1], "granary_peer_chunk_reads_total") == 0 {
		t.Fatal("no node read a chunk from its owner")
	}
}

func TestClusterNodeKilledMidRead(t *testing.T) {
	mio := miniotest.StartT(t)
	// A slow origin, so the restore below is still running at the kill.
	proxy, err := slowproxy.Start(mio.Endpoint, slowproxy.Options{Total: 24e6, Latency: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	r := startCluster(t, mio, "s3://"+proxy.Addr()+"?secure=false", 3, "--chunk-size", "1MiB", "--peer-timeout", "2s")
	ctx := context.Background()
	direct := directClient(t, mio)
	if err := direct.MakeBucket(ctx, "ckpt", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	big := randomBytes(99, 40<<20+3)
	if _, err := direct.PutObject(ctx, "ckpt", "shard-0", bytes.NewReader(big), int64(len(big)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	obj, err := nodeClient(t, r.env, r.addrs[0]).GetObject(ctx, "ckpt", "shard-0", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	var got bytes.Buffer
	if _, err := io.CopyN(&got, obj, 6<<20); err != nil {
		t.Fatalf("first 6 MiB: %v", err)
	}
	r.nodes[1].kill(t)
	r.nodes[1] = nil
	if _, err := got.ReadFrom(obj); err != nil {
		t.Fatalf("the read failed after a node died, %d bytes in: %v\nnode 1's log:\n%s", got.Len(), err, r.nodes[0].stderr.String())
	}
	if sha256.Sum256(got.Bytes()) != sha256.Sum256(big) {
		t.Fatalf("the read returned %d bytes that differ from the object", got.Len())
	}
	if metric(t, r.addrs[0], "granary_peer_errors_total") == 0 {
		t.Fatal("node 1 never noticed node 2 gone: the kill missed the read")
	}
	// The status lists the dead member, unhealthy.
	var out bytes.Buffer
	if code := execute(ctx, []string{"status", "--endpoint", "http://" + r.addrs[0]}, &out, &out, envMap(r.env)); code != exitOK ||
		!strings.Contains(out.String(), "3 members") || !strings.Contains(out.String(), "unreachable") {
		t.Fatalf("status after a node died: exit %d\n%s", code, out.String())
	}
}

func TestClusterRefusesPeersWithoutTheSecret(t *testing.T) {
	mio := miniotest.StartT(t)
	r := startCluster(t, mio, "s3://"+mio.Endpoint+"?secure=false", 2)
	ctx := context.Background()
	target := cluster.Member{ID: r.ids[0], Addr: r.addrs[0]}
	good := peer.NewClient("n2", []byte(testClusterSecret), 0)
	if err := good.Ping(ctx, target); err != nil {
		t.Fatalf("a member with the secret is refused: %v", err)
	}
	bad := peer.NewClient("n2", []byte("another-secret-of-some-length"), 0)
	if err := bad.Ping(ctx, target); !errors.Is(err, peer.ErrUnauthenticated) {
		t.Fatalf("a peer with a wrong secret: %v, want Unauthenticated", err)
	}
	if err := bad.Forget(ctx, target, "data", "x", nil); !errors.Is(err, peer.ErrUnauthenticated) {
		t.Fatalf("a forget with a wrong secret: %v, want Unauthenticated", err)
	}
	resp, err := http.Get("http://" + r.addrs[0] + peer.RoutePing)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("an unsigned peer request answered %d", resp.StatusCode)
	}
}

func TestClusterHungPeerCostsOneTimeout(t *testing.T) {
	mio := miniotest.StartT(t)
	r := startCluster(t, mio, "s3://"+mio.Endpoint+"?secure=false", 3, "--chunk-size", "256KiB", "--peer-timeout", "1s")
	ctx := context.Background()
	direct := directClient(t, mio)
	if err := direct.MakeBucket(ctx, "set", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	data := make([][]byte, 16)
	for i := range data {
		data[i] = randomBytes(uint64(500+i), 300<<10)
		if _, err := direct.PutObject(ctx, "set", objectName(i), bytes.NewReader(data[i]), int64(len(data[i])), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Node 2 stops answering (SIGSTOP: its connections stay open).
	r.nodes[1].cmd.Process.Signal(syscall.SIGSTOP)
	defer r.nodes[1].cmd.Process.Signal(syscall.SIGCONT)
	c1 := nodeClient(t, r.env, r.addrs[0])
	done := make(chan error, 1)
	go func() {
		for i := range data {
			if !bytes.Equal(getAll(t, c1, "set", objectName(i)), data[i]) {
				done <- errors.New(objectName(i) + " read wrong")
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("reads hang on a hung peer")
	}
	if metric(t, r.addrs[0], "granary_peer_errors_total") == 0 {
		t.Fatal("no read went to the hung peer: the test proved nothing")
	}
}

func TestClusterPeerBadInput(t *testing.T) {
	mio := miniotest.StartT(t)
	r := startCluster(t, mio, "s3://"+mio.Endpoint+"?secure=false", 1, "--chunk-size", "256KiB")
	ctx := context.Background()
	c := peer.NewClient("n9", []byte(testClusterSecret), 0)
	target := cluster.Member{ID: r.ids[0], Addr: r.addrs[0]}
	id := store.ChunkID{Bucket: "set", Key: "k", ETag: "abc", Index: 0}
	cases := []struct {
		name     string
		n, chunk int64
		id       store.ChunkID
		want     error
	}{
		{"another chunk size", 100, 1 << 20, id, peer.ErrChunkSize},
		{"longer than a chunk", 300 << 10, 256 << 10, id, peer.ErrBadRequest},
		{"no etag", 100, 256 << 10, store.ChunkID{Bucket: "set", Key: "k"}, peer.ErrBadRequest},
		{"bad bucket", 100, 256 << 10, store.ChunkID{Bucket: "A_B", Key: "k", ETag: "x"}, peer.ErrBadRequest},
		{"negative index", 100, 256 << 10, store.ChunkID{Bucket: "set", Key: "k", ETag: "x", Index: -1}, peer.ErrBadRequest},
		{"a terabyte", 1 << 40, 1 << 40, id, peer.ErrChunkSize},
	}
	for _, tc := range cases {
		if _, err := c.GetChunk(ctx, target, peer.ChunkRequest{ID: tc.id, Len: tc.n, Chunk: tc.chunk}); !errors.Is(err, tc.want) {
			t.Errorf("get, %s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if err := c.PutChunk(ctx, target, id, 1<<20, []byte("x")); !errors.Is(err, peer.ErrChunkSize) {
		t.Errorf("put with another chunk size: %v, want ChunkSizeMismatch", err)
	}
	if err := c.Ping(ctx, target); err != nil {
		t.Fatalf("the node does not answer after bad chunk calls: %v", err)
	}
	// A chunk of an object the origin does not have fails; it is not
	// served as empty or short.
	rc, err := c.GetChunk(ctx, target, peer.ChunkRequest{ID: store.ChunkID{Bucket: "set", Key: "nothing", ETag: "abc"}, Len: 1000, Chunk: 256 << 10})
	if err == nil {
		_, err = io.ReadAll(rc)
		rc.Close()
	}
	if err == nil {
		t.Fatal("a chunk of a missing object was served")
	}
}

func TestClusterStatusLocatesAnObject(t *testing.T) {
	mio := miniotest.StartT(t)
	r := startCluster(t, mio, "s3://"+mio.Endpoint+"?secure=false", 3, "--chunk-size", "256KiB")
	ctx := context.Background()
	direct := directClient(t, mio)
	if err := direct.MakeBucket(ctx, "data", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	obj := randomBytes(77, 4<<20) // 16 chunks over 3 owners
	if _, err := direct.PutObject(ctx, "data", "model.bin", bytes.NewReader(obj), int64(len(obj)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(getAll(t, nodeClient(t, r.env, r.addrs[0]), "data", "model.bin"), obj) {
		t.Fatal("read wrong")
	}
	owned, holders := ownedBytes(t, r, 2, "data", "model.bin", int64(len(obj)))
	if owned != int64(len(obj)) || holders < 2 {
		t.Fatalf("owners hold %d of %d bytes over %d nodes; want every byte once, spread", owned, len(obj), holders)
	}
	var out bytes.Buffer
	if code := execute(ctx, []string{"status", "--endpoint", "http://" + r.addrs[2], "--object", "s3://data/model.bin"},
		&out, &out, envMap(r.env)); code != exitOK || !strings.Contains(out.String(), "OBJECT s3://data/model.bin") {
		t.Fatalf("status text: exit %d:\n%s", code, out.String())
	}
}

// ownedBytes asks node i (granary status --object --json) where an
// object of size bytes is, and returns the bytes the nodes' RAM tiers hold
// of it (owned chunks: copies served for others are in the hot tier) and
// how many nodes hold some.
func ownedBytes(t *testing.T, r *clusterRig, i int, bucket, key string, size int64) (owned int64, holders int) {
	t.Helper()
	var out bytes.Buffer
	code := execute(context.Background(), []string{"status", "--endpoint", "http://" + r.addrs[i], "--object", "--json",
		"s3://" + bucket + "/" + key}, &out, &out, envMap(r.env))
	if code != exitOK {
		t.Fatalf("status: exit %d: %s", code, out.String())
	}
	var cs api.ClusterStatus
	if err := json.Unmarshal(out.Bytes(), &cs); err != nil || len(cs.Nodes) != len(r.addrs) || cs.Self != r.ids[i] {
		t.Fatalf("status answer %v: %s", err, out.String())
	}
	for _, n := range cs.Nodes {
		var st ops.Status
		if err := json.Unmarshal(n.Status, &st); err != nil || st.Object == nil || st.Object.Size != size {
			t.Fatalf("node %s: %v %s", n.ID, err, n.Status)
		}
		if ram := st.Object.ByTier["ram"]; ram > 0 {
			owned += ram
			holders++
		}
	}
	return owned, holders
}
