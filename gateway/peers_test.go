// The engine in a cluster, on the in-process fake (fakepeers_test.go):
// who reads a chunk from the origin, fail-over between owners, placement
// of written chunks, invalidation, and reads of versions the origin does
// not have yet.
package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/internal/poll"
	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/writeback"
)

func TestClusterReadsEachChunkFromTheOriginOnce(t *testing.T) {
	c := newFakeCluster(t, fakeClusterOptions{n: 3, owners: 1, chunk: 64 << 10})
	data := randBytes(t, 5*64<<10+100) // 6 chunks
	base := newRigFor(t, c)
	base.seed("obj", data)
	for round := range 2 {
		for i := range c.engines {
			got, err := c.read(i, "obj")
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("round %d, node %d: %d bytes, %v", round, i, len(got), err)
			}
		}
	}
	if n := c.originGets(); n != 6 {
		t.Fatalf("the cluster read the origin %d times for 6 chunks", n)
	}
	// Each node asked the owner of each chunk it does not own once: the
	// second round came from its hot copies.
	for i := range c.engines {
		for idx := range int64(6) {
			o := c.chunkOwner("obj", idx)
			if o == i {
				continue
			}
			if n := c.count(i, o, "get") + c.count(i, o, "first"); n < 1 {
				t.Errorf("node %d never asked owner %d for chunk %d", i, o, idx)
			}
		}
	}
	asked := 0 // chunk calls: a first call brings chunk 0 with the info
	for i := range c.engines {
		for j := range c.engines {
			asked += c.count(i, j, "get") + c.count(i, j, "first")
		}
	}
	if asked != 2*6 {
		t.Errorf("%d chunk calls for 6 chunks read by 2 non-owners each, twice", asked)
	}
}

// newRigFor is a rig on c's bucket, for seeding the origin behind the
// cluster's back.
func newRigFor(t *testing.T, c *fakeCluster) *rig {
	r := newRig(t, rigOptions{chunk: 64 << 10})
	r.bucket = c.bucket
	return r
}

func TestClusterOwnerDyingMidChunkCostsNoRead(t *testing.T) {
	c := newFakeCluster(t, fakeClusterOptions{n: 3, owners: 2, chunk: 64 << 10})
	data := randBytes(t, 64<<10)
	newRigFor(t, c).seed("one", data)
	owner := c.chunkOwner("one", 0)
	// Warm both owners through the owner.
	if got, err := c.read(owner, "one"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("owner read: %v", err)
	}
	settle(t, c.engines[owner])
	gets := c.originGets()
	// The first owner dies 1000 bytes into every chunk it sends.
	c.mu.Lock()
	c.cut[c.members[owner].ID] = 1000
	c.mu.Unlock()
	reader := -1
	for i := range c.engines {
		if mine, _ := c.engines[i].chunkOwners(store.ChunkID{Bucket: c.bucket, Key: "one"}); !mine {
			reader = i
		}
	}
	if reader < 0 {
		t.Fatal("no node of 3 is a non-owner of a chunk with 2 owners")
	}
	got, err := c.read(reader, "one")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read through node %d with the owner cut mid-chunk: %d bytes, %v", reader, len(got), err)
	}
	// One call: the object's info and first chunk at once (first).
	if n := c.count(reader, owner, "first") + c.count(reader, owner, "get") + c.count(reader, owner, "head"); n != 1 {
		t.Fatalf("the reader asked the owner %d times", n)
	}
	if n := c.originGets() - gets; n != 0 {
		t.Fatalf("%d origin reads: the second owner did not finish the chunk", n)
	}
	if errs := peerErrors(c.engines[reader], "get"); errs == 0 {
		t.Fatal("the cut was not noticed: the test proved nothing")
	}
}

func TestClusterEveryOwnerDownReadsTheOrigin(t *testing.T) {
	c := newFakeCluster(t, fakeClusterOptions{n: 3, owners: 1, chunk: 64 << 10})
	data := randBytes(t, 3*64<<10)
	newRigFor(t, c).seed("obj", data)
	c.mu.Lock()
	c.down["n1"], c.down["n2"] = true, true
	c.mu.Unlock()
	got, err := c.read(0, "obj")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read with every other member down: %d bytes, %v", len(got), err)
	}
	if c.originGets() == 0 {
		t.Fatal("no origin read: the down members answered")
	}
}

func TestClusterWritePlacesChunksAndEveryMemberForgets(t *testing.T) {
	c := newFakeCluster(t, fakeClusterOptions{n: 3, owners: 1, chunk: 64 << 10, modes: map[string]WriteMode{"rig": WriteThrough}})
	ctx := context.Background()
	for v := range 2 {
		data := randBytes(t, 4*64<<10)
		writer := v // node 0 writes, then node 1 overwrites
		if _, err := c.engines[writer].Put(ctx, c.bucket, "ckpt", bytes.NewReader(data), int64(len(data)), store.ObjectMeta{}); err != nil {
			t.Fatal(err)
		}
		for i := range c.engines {
			if i != writer && c.count(writer, i, "forget") != 1 {
				t.Fatalf("version %d: node %d was told to forget %d times", v, i, c.count(writer, i, "forget"))
			}
		}
		settle(t, c.engines[writer])
		gets := c.originGets()
		for i := range c.engines {
			got, err := c.read(i, "ckpt")
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("version %d through node %d: %d bytes, %v", v, i, len(got), err)
			}
		}
		if n := c.originGets() - gets; n != 0 {
			t.Fatalf("version %d: reads after the write reached the origin %d times", v, n)
		}
		// Written chunks are on writeCopies (2) owners.
		for idx := range int64(4) {
			held := 0
			for _, e := range c.engines {
				if _, err := e.opts.RAM.Get(store.ChunkID{Bucket: c.bucket, Key: "ckpt", ETag: etagOf(t, c, "ckpt"), Index: idx}); err == nil {
					held++
				}
			}
			if held < 2 {
				t.Errorf("version %d: chunk %d is in %d RAM tiers, want 2 owners", v, idx, held)
			}
		}
		for i := range c.engines {
			for j := range c.engines {
				c.mu.Lock()
				delete(c.calls, fmt.Sprintf("%d>%d forget", i, j))
				c.mu.Unlock()
			}
		}
	}
}

func etagOf(t *testing.T, c *fakeCluster, key string) string {
	info, err := c.engines[0].Head(context.Background(), c.bucket, key)
	if err != nil {
		t.Fatal(err)
	}
	return info.ETag
}

func peerErrors(e *Engine, op string) float64 {
	return testutil.ToFloat64(e.m.peerErrors.WithLabelValues(op))
}

// stuckUploads is an origin that takes no writes (a write-back upload
// fails and waits for its retry), so written objects stay on their
// writer.
type stuckUploads struct {
	store.Origin
	store.Multipart
}

func (stuckUploads) Put(context.Context, string, string, io.Reader, int64, store.ObjectMeta) (store.ObjectInfo, error) {
	return store.ObjectInfo{}, store.ErrUnavailable
}

func (stuckUploads) NewUpload(context.Context, string, string, store.ObjectMeta) (string, error) {
	return "", store.ErrUnavailable
}

func TestClusterReadsAWriteBackObjectFromItsWriter(t *testing.T) {
	wrap := func(o store.Origin) store.Origin {
		log, err := writeback.Open(writeback.Options{Origin: stuckUploads{o, o.(store.Multipart)}, Dir: t.TempDir(),
			WriteBack: func(string) bool { return true }, RetryMin: time.Hour, RetryMax: time.Hour, Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { log.Close() })
		return log
	}
	c := newFakeCluster(t, fakeClusterOptions{n: 3, owners: 1, chunk: 64 << 10, wrap: wrap, modes: map[string]WriteMode{"rig": WriteBack}})
	data := randBytes(t, 3*64<<10)
	info, err := c.engines[0].Put(context.Background(), c.bucket, "ckpt", bytes.NewReader(data), int64(len(data)), store.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	settle(t, c.engines[0])
	// The other members learned the version and its writer.
	for i := 1; i < 3; i++ {
		w, ok := c.engines[i].pendingWriter(store.ChunkID{Bucket: c.bucket, Key: "ckpt", ETag: info.ETag})
		if !ok || w.ID != "n0" {
			t.Fatalf("node %d: pending writer %v %v, want n0", i, w, ok)
		}
	}
	// The owners lose their copies (evicted, say): the writer still has
	// the object, and the origin never will in this test.
	for i := 1; i < 3; i++ {
		c.engines[i].opts.RAM.DeleteObject(c.bucket, "ckpt")
		c.engines[i].opts.Hot.DeleteObject(c.bucket, "ckpt")
	}
	for i := 1; i < 3; i++ {
		got, err := c.read(i, "ckpt")
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("node %d read the unsaved object: %d bytes, %v", i, len(got), err)
		}
	}
	if c.count(1, 0, "get")+c.count(2, 0, "get") == 0 {
		t.Fatal("nobody asked the writer: the test proved nothing")
	}
}

// TestClusterFirstReadAsksTheOwnerOnce: a node without an object's
// metadata, reading it through the cluster, asks the owner of its first
// chunk for the info and that chunk in one call (no separate HEAD), and
// each other chunk from its owner; a missing key costs that one call.
func TestClusterFirstReadAsksTheOwnerOnce(t *testing.T) {
	c := newFakeCluster(t, fakeClusterOptions{n: 3, owners: 1, chunk: 64 << 10})
	data := randBytes(t, 3*64<<10) // 3 chunks
	newRigFor(t, c).seed("obj", data)
	owner := c.chunkOwner("obj", 0)
	reader := (owner + 1) % len(c.engines)
	got, err := c.read(reader, "obj")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read through non-owner %d: %d bytes, %v", reader, len(got), err)
	}
	if first, head := c.count(reader, owner, "first"), c.count(reader, owner, "head"); first != 1 || head != 0 {
		t.Fatalf("the reader asked the owner of chunk 0 %d first calls and %d heads, want 1 and 0", first, head)
	}
	for idx := int64(1); idx < 3; idx++ {
		if o := c.chunkOwner("obj", idx); o != reader && c.count(reader, o, "get") < 1 {
			t.Errorf("chunk %d: owner %d never asked", idx, o)
		}
	}
	if n := c.originGets(); n != 3 {
		t.Fatalf("%d origin reads for 3 chunks", n)
	}
	if _, err := c.engines[reader].Get(context.Background(), c.bucket, "missing", GetOptions{}); !errors.Is(err, store.ErrNoSuchKey) {
		t.Fatalf("a missing key through a non-owner: %v, want NoSuchKey", err)
	}
}

// TestClusterHopOfTheChunkReadNowRunsInTheReader: a chunk a reader sends
// whole and next (its range's last, under maxSpan of it left) is asked of
// its owner on the reader's goroutine, with no hand-off; chunks read
// ahead are asked on goroutines of their own, so a long read is not
// serialised behind its fetches.
func TestClusterHopOfTheChunkReadNowRunsInTheReader(t *testing.T) {
	const cs = 64 << 10
	c := newFakeCluster(t, fakeClusterOptions{n: 3, owners: 1, chunk: cs, hot: 1}) // no hot copies
	data := randBytes(t, 4*cs)
	newRigFor(t, c).seed("obj", data)
	reader := (c.chunkOwner("obj", 3) + 1) % len(c.engines)
	got, err := c.read(reader, "obj")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read through %d: %d bytes, %v", reader, len(got), err)
	}
	for o := range c.engines {
		if n := c.count(reader, o, "get in reader"); n != 0 {
			t.Fatalf("a whole read asked member %d %d times from the reader's goroutine, want read-ahead", o, n)
		}
	}
	owner := c.chunkOwner("obj", 3)
	before := c.count(reader, owner, "get")
	obj, err := c.engines[reader].Get(context.Background(), c.bucket, "obj", GetOptions{Range: &Range{Start: 3 * cs, End: 4*cs - 1}})
	if err != nil {
		t.Fatal(err)
	}
	got, err = io.ReadAll(obj)
	obj.Close()
	if err != nil || !bytes.Equal(got, data[3*cs:]) {
		t.Fatalf("ranged read of the last chunk: %d bytes, %v", len(got), err)
	}
	if asked, inline := c.count(reader, owner, "get")-before, c.count(reader, owner, "get in reader"); asked != 1 || inline != 1 {
		t.Fatalf("the last chunk was asked of its owner %d times, %d of them from the reader's goroutine; want 1 and 1", asked, inline)
	}
	// A range that ends before its chunk does is sent once its own bytes
	// are in, not once the whole chunk is: its fetch keeps a goroutine.
	obj, err = c.engines[reader].Get(context.Background(), c.bucket, "obj", GetOptions{Range: &Range{Start: 3 * cs, End: 3*cs + 99}})
	if err != nil {
		t.Fatal(err)
	}
	got, err = io.ReadAll(obj)
	obj.Close()
	if err != nil || !bytes.Equal(got, data[3*cs:3*cs+100]) {
		t.Fatalf("ranged read of the last chunk's start: %d bytes, %v", len(got), err)
	}
	if asked, inline := c.count(reader, owner, "get")-before, c.count(reader, owner, "get in reader"); asked != 2 || inline != 1 {
		t.Fatalf("after a short range, the last chunk was asked of its owner %d times, %d of them from the reader's goroutine; want 2 and 1", asked, inline)
	}
}

// TestClusterFirstReadOfAnOlderOwner: an owner that knows no first call
// (an older version, in a rolling upgrade) is asked as before, a HEAD and
// a chunk call, without a peer error or an origin HEAD.
func TestClusterFirstReadOfAnOlderOwner(t *testing.T) {
	c := newFakeCluster(t, fakeClusterOptions{n: 3, owners: 1, chunk: 64 << 10})
	data := randBytes(t, 64<<10)
	r := newRigFor(t, c)
	r.seed("obj", data)
	owner := c.chunkOwner("obj", 0)
	reader := (owner + 1) % len(c.engines)
	c.mu.Lock()
	c.old[c.members[owner].ID] = true
	c.mu.Unlock()
	got, err := c.read(reader, "obj")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read through non-owner %d: %d bytes, %v", reader, len(got), err)
	}
	if head, get := c.count(reader, owner, "head"), c.count(reader, owner, "get"); head != 1 || get != 1 {
		t.Fatalf("the older owner was asked %d heads and %d chunks, want 1 and 1", head, get)
	}
	if n := peerErrors(c.engines[reader], "head"); n != 0 {
		t.Fatalf("%v peer errors for an older owner", n)
	}
}

// TestClusterHotCopiesOnDiskServeRepeats: a node whose RAM keeps no hot
// copies keeps the chunks it read from their owners on its disk, in the
// room its owned chunks leave; a repeat is read there, asking no owner.
// Dropping the object drops the copies.
func TestClusterHotCopiesOnDiskServeRepeats(t *testing.T) {
	const cs = 64 << 10
	c := newFakeCluster(t, fakeClusterOptions{n: 3, owners: 1, chunk: cs, hot: 1, disk: 64 << 20}) // no hot copies in RAM
	data := randBytes(t, 6*cs)
	newRigFor(t, c).seed("obj", data)
	reader, hops := c.aReader(t, "obj", 6)
	got, err := c.read(reader, "obj")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("first read: %d bytes, %v", len(got), err)
	}
	e := c.engines[reader]
	poll.Until(t, "the hot copies on disk", func() bool { return e.opts.HotDisk.Stats().Chunks == int64(hops) })
	asked := func() int { return c.count(reader, (reader+1)%3, "get") + c.count(reader, (reader+2)%3, "get") }
	before := asked()
	got, err = c.read(reader, "obj")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("repeat: %d bytes, %v", len(got), err)
	}
	if n := asked() - before; n != 0 {
		t.Fatalf("the repeat asked owners %d times, want 0: its copies are on this node's disk", n)
	}
	if n := testutil.ToFloat64(e.m.hits.WithLabelValues(c.bucket, "hot-disk")); n != float64(hops) {
		t.Fatalf("hot-disk hits %v, want %d", n, hops)
	}
	// The reader's own chunks reach its disk in the background.
	poll.Until(t, "the reader's own chunks on disk", func() bool { return e.opts.Disk.Stats().Chunks >= int64(6-hops) })
	if n := e.opts.Disk.Stats().Chunks; n != int64(6-hops) {
		t.Fatalf("the disk tier of owned chunks holds %d, want the reader's own %d", n, 6-hops)
	}
	e.forgetData(c.bucket, "obj")
	if n := e.opts.HotDisk.Stats().Chunks; n != 0 {
		t.Fatalf("%d hot copies on disk outlived the object's invalidation", n)
	}
}

// TestClusterHotCopiesInRAMAreNotWrittenToDisk: while the hot tier in RAM
// has room for a copy, the copy costs no disk write.
func TestClusterHotCopiesInRAMAreNotWrittenToDisk(t *testing.T) {
	const cs = 64 << 10
	c := newFakeCluster(t, fakeClusterOptions{n: 3, owners: 1, chunk: cs, disk: 64 << 20})
	data := randBytes(t, 6*cs)
	newRigFor(t, c).seed("obj", data)
	reader, hops := c.aReader(t, "obj", 6)
	if got, err := c.read(reader, "obj"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read: %d bytes, %v", len(got), err)
	}
	e := c.engines[reader]
	poll.Until(t, "the hot copies in RAM", func() bool { return e.opts.Hot.Stats().Chunks == int64(hops) })
	// The disk queue also carries the reader's own chunks: once it is
	// through them, no copy may have gone to disk.
	poll.Until(t, "the disk queue drained", func() bool { return e.filler.queued.Load() == 0 })
	if n := e.opts.HotDisk.Stats().Chunks; n != 0 {
		t.Fatalf("copies RAM keeps: %d copies on disk, want none", n)
	}
}
