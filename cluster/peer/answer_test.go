// Sealed answers against an asker's transport that changes them on the
// way: a flipped byte, a cut body, frames moved, a seal dropped, and an
// answer (or a refusal) of one call handed to another. Every one fails
// the call or its read with ErrBadAnswer (or io.ErrUnexpectedEOF for a
// cut), and no byte of a frame that did not match is ever returned.
package peer

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/granary-dev/granary/internal/testcerts"
	"github.com/granary-dev/granary/store"
)

// editor is an asker's transport that hands each answer, read whole, to
// edit before the client sees it (nil edit: unchanged).
type editor struct {
	rt   http.RoundTripper
	mu   sync.Mutex
	edit func(req *http.Request, resp *http.Response, body []byte) []byte
}

func (e *editor) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := e.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	edit := e.edit
	e.mu.Unlock()
	if edit != nil {
		body = edit(req, resp, body)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

func (e *editor) set(edit func(req *http.Request, resp *http.Response, body []byte) []byte) {
	e.mu.Lock()
	e.edit = edit
	e.mu.Unlock()
}

// editRig is a rig whose client's answers pass through an editor.
func editRig(t *testing.T) (*rig, *editor) {
	r := startRig(t, false)
	ed := &editor{rt: r.client.rt}
	r.client.rt = ed
	return r, ed
}

// frameAt is where frame i's payload starts in a framed body.
func frameAt(i int) int { return i * (FrameSize + TagSize) }

// readFrames reads rc as a flight does (256 KiB at a time) and returns
// what it yielded and how it ended.
func readFrames(rc io.ReadCloser) ([]byte, error) {
	defer rc.Close()
	var got []byte
	p := make([]byte, 256<<10)
	for {
		n, err := rc.Read(p)
		got = append(got, p[:n]...)
		if err == io.EOF {
			return got, nil
		}
		if err != nil {
			return got, err
		}
	}
}

func TestChunkAnswerChangedOnTheWay(t *testing.T) {
	r, ed := editRig(t)
	r.be.chunk = 4 * FrameSize
	data := make([]byte, 3*FrameSize+100) // four frames, the last short
	for i := range data {
		data[i] = byte(i*7 + i>>9)
	}
	id := store.ChunkID{Bucket: "b", Key: "k", ETag: "e"}
	r.be.chunks[id] = data
	flip := func(at int) func(*http.Request, *http.Response, []byte) []byte {
		return func(_ *http.Request, _ *http.Response, b []byte) []byte {
			b = bytes.Clone(b)
			b[at] ^= 0x20
			return b
		}
	}
	cases := []struct {
		name string
		edit func(*http.Request, *http.Response, []byte) []byte
		bad  int   // the first frame that must not be returned
		want error // how the read fails
	}{
		{"a byte of frame 0", flip(frameAt(0) + 5), 0, ErrBadAnswer},
		{"a byte of frame 2", flip(frameAt(2) + FrameSize - 1), 2, ErrBadAnswer},
		{"a byte of the last frame", flip(frameAt(3) + 99), 3, ErrBadAnswer},
		{"a byte of a tag", flip(frameAt(1) + FrameSize + 3), 1, ErrBadAnswer},
		{"frames 1 and 2 swapped", func(_ *http.Request, _ *http.Response, b []byte) []byte {
			out := bytes.Clone(b)
			copy(out[frameAt(1):], b[frameAt(2):frameAt(3)])
			copy(out[frameAt(2):], b[frameAt(1):frameAt(2)])
			return out
		}, 1, ErrBadAnswer},
		{"cut after two frames", func(_ *http.Request, _ *http.Response, b []byte) []byte { return b[:frameAt(2)] }, 2, io.ErrUnexpectedEOF},
		{"cut inside frame 1", func(_ *http.Request, _ *http.Response, b []byte) []byte { return b[:frameAt(1)+100] }, 1, io.ErrUnexpectedEOF},
		{"cut before the last tag", func(_ *http.Request, _ *http.Response, b []byte) []byte { return b[:len(b)-1] }, 3, io.ErrUnexpectedEOF},
	}
	for _, streamed := range []bool{false, true} {
		r.be.streamed = streamed
		for _, tc := range cases {
			ed.set(tc.edit)
			rc, err := r.client.GetChunk(context.Background(), r.to, ChunkRequest{ID: id, Len: int64(len(data)), Chunk: r.be.chunk})
			if err != nil {
				t.Fatalf("%s: the call failed before its body: %v", tc.name, err)
			}
			got, err := readFrames(rc)
			if !errors.Is(err, tc.want) {
				t.Errorf("%s (streamed %v): the read ended with %v, want %v", tc.name, streamed, err, tc.want)
			}
			if len(got) > tc.bad*FrameSize || !bytes.Equal(got, data[:len(got)]) {
				t.Errorf("%s (streamed %v): %d bytes returned, want the %d of the frames before the bad one, unchanged", tc.name, streamed, len(got), tc.bad*FrameSize)
			}
		}
	}
	// Untouched, the same calls read the chunk whole, from any offset,
	// into buffers larger or smaller than a frame.
	ed.set(nil)
	for _, off := range []int64{0, 1, FrameSize, int64(len(data)) - 1, int64(len(data))} {
		rc, err := r.client.GetChunk(context.Background(), r.to, ChunkRequest{ID: id, Len: int64(len(data)), Chunk: r.be.chunk, Off: off})
		if err != nil {
			t.Fatal(err)
		}
		small, err := io.ReadAll(rc) // 512-byte reads and up
		rc.Close()
		if err != nil || !bytes.Equal(small, data[off:]) {
			t.Fatalf("from %d: %d bytes, %v", off, len(small), err)
		}
	}
}

// TestAnswersSealed: a byte flipped in any answer the asker acts on (an
// object's info, a first call's info header, a ping's identity, a
// pending flag, a refusal's code) or its seal dropped fails the call
// with ErrBadAnswer, never a wrong answer or another refusal.
func TestAnswersSealed(t *testing.T) {
	r, ed := editRig(t)
	ctx := context.Background()
	info := store.ObjectInfo{Bucket: "b", Key: "k", ETag: "e1", Size: 3}
	r.be.heads["b/k"] = info
	r.be.chunks[store.ChunkID{Bucket: "b", Key: "k", ETag: "e1"}] = []byte("abc")
	r.be.pending = map[string]bool{"b/k": true}
	calls := map[string]func() error{
		"head":    func() error { _, err := r.client.Head(ctx, r.to, "b", "k", false); return err },
		"ping":    func() error { return r.client.Ping(ctx, r.to) },
		"pending": func() error { _, err := r.client.Pending(ctx, r.to, "b", "k"); return err },
		"forget":  func() error { return r.client.Forget(ctx, r.to, "b", "k", nil) },
		"first": func() error {
			_, rc, err := r.client.GetFirst(ctx, r.to, "b", "k", 1<<10)
			if err == nil {
				_, err = readFrames(rc)
			}
			return err
		},
		"a refusal": func() error { _, err := r.client.Head(ctx, r.to, "b", "missing", false); return err },
	}
	var changed bool // by the edit of this call: an empty body has no byte to flip
	edits := map[string]func(*http.Request, *http.Response, []byte) []byte{
		"a flipped body byte": func(_ *http.Request, _ *http.Response, b []byte) []byte {
			if len(b) == 0 {
				changed = false
				return b
			}
			b = bytes.Clone(b)
			b[len(b)/2] ^= 1
			return b
		},
		"a flipped header byte": func(_ *http.Request, resp *http.Response, b []byte) []byte {
			if v := resp.Header.Get(HeaderObject); v != "" {
				resp.Header.Set(HeaderObject, "e30="+v) // "{}" first
			} else {
				resp.Header.Set(HeaderAnswer, otherFirstDigit(resp.Header.Get(HeaderAnswer)))
			}
			return b
		},
		"another status": func(_ *http.Request, resp *http.Response, b []byte) []byte {
			if resp.StatusCode == http.StatusOK {
				resp.StatusCode = http.StatusNoContent
			} else {
				resp.StatusCode = http.StatusServiceUnavailable
			}
			return b
		},
		"no seal": func(_ *http.Request, resp *http.Response, b []byte) []byte { resp.Header.Del(HeaderAnswer); return b },
	}
	for call, do := range calls {
		ed.set(nil)
		if err := do(); err != nil && call != "a refusal" {
			t.Fatalf("%s, untouched: %v", call, err)
		}
		for name, edit := range edits {
			changed = true
			ed.set(edit)
			if err := do(); changed && !errors.Is(err, ErrBadAnswer) {
				t.Errorf("%s, %s: %v, want ErrBadAnswer", call, name, err)
			}
		}
	}
}

// TestAnswerReplayedOntoAnotherCall: an answer the asker got for one
// call, handed to it again for another call asking the same, does not
// verify: a chunk, an object's info, a refusal.
func TestAnswerReplayedOntoAnotherCall(t *testing.T) {
	r, ed := editRig(t)
	ctx := context.Background()
	data := bytes.Repeat([]byte("x"), 1000)
	id := store.ChunkID{Bucket: "b", Key: "k", ETag: "e1"}
	r.be.chunks[id] = data
	r.be.heads["b/k"] = store.ObjectInfo{Bucket: "b", Key: "k", ETag: "e1", Size: 1000}
	var (
		mu    sync.Mutex
		saved = map[string]*http.Response{} // by route: the first answer
		body  = map[string][]byte{}
	)
	ed.set(func(req *http.Request, resp *http.Response, b []byte) []byte {
		mu.Lock()
		defer mu.Unlock()
		route := req.URL.Path + "?" + req.URL.Query().Get("key")
		old, ok := saved[route]
		if !ok {
			saved[route], body[route] = &http.Response{StatusCode: resp.StatusCode, Header: resp.Header.Clone(), ContentLength: resp.ContentLength}, b
			return b
		}
		resp.StatusCode, resp.Header, resp.ContentLength = old.StatusCode, old.Header.Clone(), old.ContentLength
		return body[route]
	})
	get := func() ([]byte, error) {
		rc, err := r.client.GetChunk(ctx, r.to, ChunkRequest{ID: id, Len: 1000, Chunk: 1 << 10})
		if err != nil {
			return nil, err
		}
		return readFrames(rc)
	}
	if got, err := get(); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the first chunk call: %d bytes, %v", len(got), err)
	}
	if got, err := get(); !errors.Is(err, ErrBadAnswer) || len(got) != 0 {
		t.Fatalf("its answer for a second call: %d bytes, %v, want ErrBadAnswer", len(got), err)
	}
	if _, err := r.client.Head(ctx, r.to, "b", "k", false); err != nil {
		t.Fatal(err)
	}
	if _, err := r.client.Head(ctx, r.to, "b", "k", false); !errors.Is(err, ErrBadAnswer) {
		t.Fatalf("a head's answer for a second call: %v, want ErrBadAnswer", err)
	}
	// A sealed NoSuchKey of one call, handed to a call whose object is
	// there, is not a NoSuchKey.
	if _, err := r.client.Head(ctx, r.to, "b", "gone", false); !errors.Is(err, store.ErrNoSuchKey) {
		t.Fatal(err)
	}
	r.be.heads["b/gone"] = store.ObjectInfo{Bucket: "b", Key: "gone", ETag: "e2"}
	if _, err := r.client.Head(ctx, r.to, "b", "gone", false); !errors.Is(err, ErrBadAnswer) || errors.Is(err, store.ErrNoSuchKey) {
		t.Fatalf("a refusal of another call: %v, want ErrBadAnswer", err)
	}
}

// TestFramedLen: the length of a framed body, and so its frames.
func TestFramedLen(t *testing.T) {
	for n, want := range map[int64]int64{0: 0, 1: 1 + TagSize, FrameSize: FrameSize + TagSize, FrameSize + 1: FrameSize + 1 + 2*TagSize} {
		if got := framedLen(n); got != want {
			t.Errorf("framedLen(%d) = %d, want %d", n, got, want)
		}
	}
}

// TestRawChunksOverTLS: a client reaching its member over HTTPS asks for
// chunks raw (TLS authenticates their bytes) and reads them whole; the
// seal still binds the status and the info header to the call.
func TestRawChunksOverTLS(t *testing.T) {
	r := startTLSRig(t)
	ed := &editor{rt: r.client.rt}
	r.client.rt = ed
	r.be.chunk = 4 * FrameSize
	data := bytes.Repeat([]byte("0123456789abcdef"), 3*FrameSize/16+7)
	id := store.ChunkID{Bucket: "b", Key: "k", ETag: "e"}
	r.be.chunks[id] = data
	r.be.heads["b/k"] = store.ObjectInfo{Bucket: "b", Key: "k", ETag: "e", Size: int64(len(data))}
	var lengths []int64
	ed.set(func(req *http.Request, resp *http.Response, b []byte) []byte {
		if req.Header.Get(HeaderRaw) == "1" {
			lengths = append(lengths, int64(len(b)))
		}
		return b
	})
	ctx := context.Background()
	for _, streamed := range []bool{false, true} {
		r.be.streamed = streamed
		rc, err := r.client.GetChunk(ctx, r.to, ChunkRequest{ID: id, Len: int64(len(data)), Chunk: r.be.chunk, Off: 5})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := readFrames(rc); err != nil || !bytes.Equal(got, data[5:]) {
			t.Fatalf("a chunk over TLS (streamed %v): %d bytes, %v", streamed, len(got), err)
		}
		_, rc, err = r.client.GetFirst(ctx, r.to, "b", "k", r.be.chunk)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := readFrames(rc); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("a first chunk over TLS (streamed %v): %d bytes, %v", streamed, len(got), err)
		}
	}
	if want := []int64{int64(len(data)) - 5, int64(len(data)), int64(len(data)) - 5, int64(len(data))}; !slices.Equal(lengths, want) {
		t.Fatalf("answers of %v bytes asked raw, want %v: raw, without frames", lengths, want)
	}
	ed.set(func(_ *http.Request, resp *http.Response, b []byte) []byte {
		resp.Header.Set(HeaderObject, "e30="+resp.Header.Get(HeaderObject))
		return b
	})
	if _, _, err := r.client.GetFirst(ctx, r.to, "b", "k", r.be.chunk); !errors.Is(err, ErrBadAnswer) {
		t.Fatalf("a first answer whose info changed: %v, want ErrBadAnswer", err)
	}
}

// startTLSRig is startRig over TLS, the client verifying the member's
// certificate.
func startTLSRig(t testing.TB) *rig {
	ca := testcerts.NewCA(t)
	dir := t.TempDir()
	ca.Leaf(t, dir+"/cert.pem", dir+"/key.pem")
	pair, err := tls.LoadX509KeyPair(dir+"/cert.pem", dir+"/key.pem")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := startRigOn(t, tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{pair}}), false, nil)
	r.client.WithTLS(&tls.Config{RootCAs: ca.Pool()})
	return r
}

// otherFirstDigit is seal with its first hex digit changed: always another
// seal (setting "00" left one that began so, 1 in 256, as it was).
func otherFirstDigit(seal string) string {
	if seal == "" {
		return "0"
	}
	if seal[0] == '0' {
		return "1" + seal[1:]
	}
	return "0" + seal[1:]
}
