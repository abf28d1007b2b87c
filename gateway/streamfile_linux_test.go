// A streamed body's spans that lie in RAM's arena, or in a local copy's
// files, reach a FileWriter as spans of that file; a writer that declines
// them is written their bytes. Either way the body is the object's.
package gateway

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/granary-dev/granary/internal/poll"
	"github.com/granary-dev/granary/store"
)

// fileSink is a FileWriter that reads the file spans it is handed back
// from their file, so its bytes are what a sendfile would have sent.
type fileSink struct {
	buf      bytes.Buffer
	fromFile int64
	decline  bool
}

func (s *fileSink) Write(p []byte) (int, error) { return s.buf.Write(p) }

func (s *fileSink) WriteFile(fd uintptr, off int64, n int) (int64, error) {
	if s.decline {
		return 0, errors.ErrUnsupported
	}
	b := make([]byte, n)
	for read := 0; read < n; {
		m, err := unix.Pread(int(fd), b[read:], off+int64(read))
		if err != nil {
			return 0, err
		}
		if m == 0 {
			return 0, errors.New("the file ended inside the span")
		}
		read += m
	}
	s.buf.Write(b)
	s.fromFile += int64(n)
	return int64(n), nil
}

func TestStreamedBodyHandsOverFileSpans(t *testing.T) {
	const chunk = 256 << 10
	r := newRig(t, rigOptions{chunk: chunk, fresh: Freshness{Mode: Immutable}})
	data := randBytes(t, 4*chunk+100_000) // every chunk an arena one (ram.ArenaMin)
	info := r.seed("shard", data)
	r.read("shard", nil) // the miss fills RAM
	poll.Until(t, "the shard in RAM", func() bool { return r.ram.Held(r.bucket, "shard", info.ETag) == int64(len(data)) })
	checkFileSpans(t, r, "shard", data)
}

// checkFileSpans reads key (data) whole, as a range across chunks and
// whole to a writer that declines file spans, checking the bytes and
// that every byte of the first two was handed over as a file span.
func checkFileSpans(t *testing.T, r *rig, key string, data []byte) {
	t.Helper()
	for _, c := range []struct {
		rng     *Range
		decline bool
	}{{nil, false}, {&Range{Start: 100, End: int64(len(data)) - 50}, false}, {nil, true}} {
		want := data
		if c.rng != nil {
			want = data[c.rng.Start : c.rng.End+1]
		}
		obj, err := r.e.Get(context.Background(), r.bucket, key, GetOptions{Range: c.rng})
		if err != nil {
			t.Fatal(err)
		}
		sink := &fileSink{decline: c.decline}
		n, err := obj.WriteTo(sink)
		obj.Close()
		if err != nil || n != int64(len(want)) || !bytes.Equal(sink.buf.Bytes(), want) {
			t.Fatalf("range %+v, declined %v: wrote %d bytes (%v), not the object's %d", c.rng, c.decline, n, err, len(want))
		}
		if wantFile := map[bool]int64{false: int64(len(want)), true: 0}[c.decline]; sink.fromFile != wantFile {
			t.Fatalf("range %+v, declined %v: %d bytes handed over as file spans, want %d", c.rng, c.decline, sink.fromFile, wantFile)
		}
	}
}

// A restore of a save still staged on this node (write-back, not yet
// uploaded) reads the staged copy in place: its spans are handed over as
// spans of the staged part files, not read into a buffer first.
func TestStreamedLocalCopyHandsOverFileSpans(t *testing.T) {
	const chunk = 384 << 10 // 5 MiB, a part, ends inside a chunk
	wrap, staged := unstartedLog(t)
	r := newRig(t, rigOptions{chunk: chunk, fresh: Freshness{Mode: Immutable}, wrap: wrap,
		modes: map[string]WriteMode{"rig": WriteBack}})
	data := randBytes(t, 5<<20+300_000)
	mp := r.upload("ckpt/shard", data, 5<<20) // two part files

	info, err := r.e.Put(context.Background(), r.bucket, "ckpt/single", bytes.NewReader(data), int64(len(data)), store.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	r.e.fills.Wait()
	for _, key := range []string{mp.Key, info.Key} {
		for _, tier := range []store.Tier{r.ram, r.disk} { // as if evicted
			if err := tier.DeleteObject(r.bucket, key); err != nil {
				t.Fatal(err)
			}
		}
		before := staged.reads.Load()
		checkFileSpans(t, r, key, data)
		if staged.reads.Load() == before {
			t.Fatalf("%s was not read from its staged copy", key)
		}
	}
}
