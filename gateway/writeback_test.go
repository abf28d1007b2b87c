// The engine over a write-back log: an acknowledged object is in the
// tiers before the origin has it, so the restore after a flush is a hit.
package gateway

import (
	"bytes"
	"context"
	"testing"

	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/writeback"
)

// newWriteBackRig is a rig whose origin is a write-back log over MinIO, in
// write-back mode for the rig's bucket.
func newWriteBackRig(t *testing.T, chunk int64) (*rig, *writeback.Log) {
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
	r := newRig(t, rigOptions{chunk: chunk, fresh: Freshness{Mode: Immutable}, wrap: wrap,
		modes: map[string]WriteMode{"rig": WriteBack}})
	return r, log
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
	r, log := newWriteBackRig(t, 1<<20)
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
