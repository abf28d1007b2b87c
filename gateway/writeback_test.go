// The engine over a write-back log: an acknowledged object is in the
// tiers before the origin has it, so the restore after a flush is a hit;
// a member's read of a copy staged here is read in place.
package gateway

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/cluster/peer"
	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/writeback"
)

// newWriteBackRig is a rig as ro says whose origin is a write-back log over
// MinIO, in write-back mode for the rig's bucket.
func newWriteBackRig(t *testing.T, ro rigOptions) (*rig, *writeback.Log) {
	var log *writeback.Log
	wrap := func(o store.Origin) store.Origin {
		var err error
		log, err = writeback.Open(writeback.Options{Origin: o, Dir: t.TempDir(),
			WriteBack: func(string) bool { return true }, Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { log.Close() })
		return log
	}
	ro.fresh, ro.wrap, ro.modes = Freshness{Mode: Immutable}, wrap, map[string]WriteMode{"rig": WriteBack}
	return newRig(t, ro), log
}

// inRAM reports whether every chunk of info is in the RAM tier.
func (r *rig) inRAM(info store.ObjectInfo) bool {
	for idx := int64(0); idx*r.e.opts.ChunkSize < info.Size; idx++ {
		if _, err := r.ram.Get(r.e.chunkID(info, idx)); err != nil {
			return false
		}
	}
	return true
}

func TestWriteBackObjectsFillTheCache(t *testing.T) {
	r, log := newWriteBackRig(t, rigOptions{chunk: 1 << 20})
	ctx := context.Background()
	big := randBytes(t, 11<<20+7)
	mp := r.upload("ckpt/multipart", big, 5<<20)
	single, err := r.e.Put(ctx, r.bucket, "ckpt/single", bytes.NewReader(big[:3<<20]), 3<<20, store.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	r.e.fills.Wait()
	for _, info := range []store.ObjectInfo{mp, single} {
		if !r.inRAM(info) {
			t.Errorf("%s: not all chunks in RAM after its write-back fill", info.Key)
		}
	}
	if err := log.Flush(ctx, r.bucket, "ckpt/", nil); err != nil {
		t.Fatal(err)
	}
	gets := r.originGets()
	if got := r.read("ckpt/multipart", nil); !bytes.Equal(got, big) {
		t.Fatal("restored bytes differ")
	}
	if r.originGets() != gets {
		t.Fatalf("the restore after the flush read the origin %d times", r.originGets()-gets)
	}
	rc, _, err := r.origin.Get(ctx, r.bucket, "ckpt/multipart", store.ReadRange{Length: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var at bytes.Buffer
	if _, err := at.ReadFrom(rc); err != nil || !bytes.Equal(at.Bytes(), big) {
		t.Fatalf("the origin's copy differs (%v)", err)
	}
}

// landing is an object that reached the origin: the ETag the log served
// for it and the one the origin gave it.
type landing struct{ key, served, origin string }

// landings hears, after the engine, of each object that reached the origin.
type landings chan landing

func (landings) Staged(context.Context, store.ObjectInfo, func() (io.ReadCloser, error)) error {
	return nil
}

func (l landings) Persisted(staged store.ObjectInfo, originETag string) {
	select {
	case l <- landing{staged.Key, staged.ETag, originETag}:
	default: // more than the test waits for
	}
}

// An object saved in a write-back bucket keeps the ETag the client got
// once it is at the origin, whatever its size: a PUT larger than the
// origin's part size goes up as one PUT (named by its MD5), a multipart
// upload with the client's parts. So the cached copy stays, and the
// restore after the flush reads nothing from the origin.
func TestWriteBackUploadKeepsTheServedETag(t *testing.T) {
	landed := make(landings, 4)
	r, log := newWriteBackRig(t, rigOptions{chunk: 1 << 20, partSize: 5 << 20, observers: []writeback.Observer{landed}})
	ctx := context.Background()
	data := randBytes(t, 12<<20+5)
	single, err := r.e.Put(ctx, r.bucket, "ckpt/single", bytes.NewReader(data), int64(len(data)), store.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	if sum := md5.Sum(data); single.ETag != hex.EncodeToString(sum[:]) {
		t.Fatalf("PUT answered ETag %s, want the body's MD5", single.ETag)
	}
	multi := r.upload("ckpt/multipart", data, 5<<20)
	r.waitFills()
	if err := log.Flush(ctx, r.bucket, "ckpt/", nil); err != nil {
		t.Fatal(err)
	}
	// The engine heard of each landing before landed does.
	for range 2 {
		select {
		case l := <-landed:
			if l.origin != l.served {
				t.Errorf("%s: the origin named it %s, the client got %s", l.key, l.origin, l.served)
			}
		case <-time.After(time.Minute):
			t.Fatal("no word of the uploads a minute after the flush")
		}
	}
	for _, want := range []store.ObjectInfo{single, multi} {
		if st, err := r.origin.Stat(ctx, r.bucket, want.Key); err != nil || st.ETag != want.ETag {
			t.Errorf("%s at the origin: ETag %s (%v), the client got %s", want.Key, st.ETag, err, want.ETag)
		}
		if h, err := r.e.Head(ctx, r.bucket, want.Key); err != nil || h.ETag != want.ETag {
			t.Errorf("HEAD %s: ETag %s (%v), the client got %s", want.Key, h.ETag, err, want.ETag)
		}
	}
	gets, stats := r.originGets(), r.originStats()
	for _, key := range []string{"ckpt/single", "ckpt/multipart"} {
		if got := r.read(key, nil); !bytes.Equal(got, data) {
			t.Fatalf("%s: restored bytes differ", key)
		}
	}
	if r.originGets() != gets || r.originStats() != stats {
		t.Fatalf("the restore after the flush read the origin (%d gets, %d stats): the cached copy was dropped",
			r.originGets()-gets, r.originStats()-stats)
	}
}

// stagedReads is a write-back log that counts the reads of staged copies
// it is asked for as a client's (GetStaged with a length): those hold its
// uploads back while the restore goes on.
type stagedReads struct {
	*writeback.Log
	reads atomic.Int64
}

// unstartedLog returns a rig's wrap that puts a write-back log in front
// of the origin, never started (what is saved stays staged), and the
// log's count of staged reads (its Log set once the rig is made).
func unstartedLog(t *testing.T) (func(store.Origin) store.Origin, *stagedReads) {
	staged := &stagedReads{}
	return func(o store.Origin) store.Origin {
		log, err := writeback.Open(writeback.Options{Origin: o, Dir: t.TempDir(),
			WriteBack: func(string) bool { return true }, Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { log.Close() })
		staged.Log = log
		return staged
	}, staged
}

func (s *stagedReads) GetStaged(bucket, key string, r store.ReadRange) (io.ReadCloser, error) {
	if r.Length != 0 {
		s.reads.Add(1)
	}
	return s.Log.GetStaged(bucket, key, r)
}

// A member asking this node for a chunk of an object staged here (saved,
// not yet uploaded) reads the staged copy in place, as this node's own
// clients do: a restore through another member holds the uploads back too.
func TestPeerReadOfAStagedCopy(t *testing.T) {
	const chunk = 1 << 20
	wrap, staged := unstartedLog(t)
	r := newRig(t, rigOptions{chunk: chunk, fresh: Freshness{Mode: Immutable}, wrap: wrap,
		modes: map[string]WriteMode{"rig": WriteBack}})
	ctx := context.Background()
	data := randBytes(t, 3*chunk+5)
	info, err := r.e.Put(ctx, r.bucket, "ckpt/shard", bytes.NewReader(data), int64(len(data)), store.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	r.e.fills.Wait()
	// Out of the tiers, as on a member whose RAM went to other chunks.
	for _, tier := range []store.Tier{r.ram, r.disk} {
		if err := tier.DeleteObject(r.bucket, info.Key); err != nil {
			t.Fatal(err)
		}
	}
	gets := r.originGets()
	for idx := int64(0); idx*chunk < info.Size; idx++ {
		n, before := r.e.chunkLen(info.Size, idx), staged.reads.Load()
		off := n / 2 // part of a chunk, as a member asks for the rest of one
		body, err := r.e.PeerBackend().Chunk(ctx, peer.ChunkRequest{ID: r.e.chunkID(info, idx), Len: n, Chunk: chunk, Off: off})
		if err != nil {
			t.Fatalf("chunk %d: %v", idx, err)
		}
		got, err := io.ReadAll(body)
		if c, ok := body.(io.Closer); ok {
			c.Close()
		}
		if want := data[idx*chunk+off : idx*chunk+n]; err != nil || !bytes.Equal(got, want) {
			t.Fatalf("chunk %d from %d: %d bytes (%v), want %d", idx, off, len(got), err, len(want))
		}
		if staged.reads.Load() == before {
			t.Errorf("chunk %d was not read from the staged copy", idx)
		}
	}
	if got := r.originGets() - gets; got != 0 {
		t.Errorf("the peer's reads made %d reads through the origin, want none", got)
	}
}
