// A streamed body's spans that lie in RAM's arena reach a FileWriter as
// spans of the arena's file; a writer that declines them is written
// their bytes. Either way the body is the object's.
package gateway

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/granary-dev/granary/internal/poll"
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
	for _, c := range []struct {
		rng     *Range
		decline bool
	}{{nil, false}, {&Range{Start: 100, End: 3*chunk + 50}, false}, {nil, true}} {
		want := data
		if c.rng != nil {
			want = data[c.rng.Start : c.rng.End+1]
		}
		obj, err := r.e.Get(context.Background(), r.bucket, "shard", GetOptions{Range: c.rng})
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
