package peer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/cluster"
	"github.com/granary-dev/granary/store"
)

const testSecret = "a-cluster-secret-for-the-tests"

// fakeBackend holds chunks in a map; err, if set, is what every call
// answers.
type fakeBackend struct {
	mu       sync.Mutex
	chunks   map[store.ChunkID][]byte
	stored   []ChunkRequest
	forgot   []string
	written  *store.ObjectInfo
	heads    map[string]store.ObjectInfo
	err      error
	asked    int
	streamed bool // answer chunks as a stream, not whole bytes
}

func (b *fakeBackend) ChunkSize() int64 { return 1 << 10 }

func (b *fakeBackend) Chunk(_ context.Context, r ChunkRequest) (io.Reader, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.asked++
	if b.err != nil {
		return nil, b.err
	}
	data, ok := b.chunks[r.ID]
	if !ok {
		return nil, store.ErrNotFound
	}
	if b.streamed {
		return io.MultiReader(bytes.NewReader(data[r.Off:])), nil
	}
	return wholeReader{bytes.NewReader(data[r.Off:]), data[r.Off:]}, nil
}

type wholeReader struct {
	io.Reader
	b []byte
}

func (w wholeReader) Bytes() ([]byte, bool) { return w.b, true }

func (b *fakeBackend) StoreChunk(r ChunkRequest, data []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stored = append(b.stored, r)
	b.chunks[r.ID] = data
	return b.err
}

func (b *fakeBackend) Forget(bucket, key string, written *store.ObjectInfo, from string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.forgot = append(b.forgot, from+":"+bucket+"/"+key)
	b.written = written
}

func (b *fakeBackend) Head(_ context.Context, bucket, key string, cachedOnly bool) (store.ObjectInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return store.ObjectInfo{}, b.err
	}
	info, ok := b.heads[bucket+"/"+key]
	switch {
	case !ok && cachedOnly:
		return info, store.ErrNotFound
	case !ok && bucket == "nobucket":
		return info, store.ErrNoSuchBucket
	case !ok:
		return info, store.ErrNoSuchKey
	}
	return info, nil
}

// fakeReplicas records the copies it is given.
type fakeReplicas struct {
	mu   sync.Mutex
	got  map[string][]byte
	drop []string
}

func (r *fakeReplicas) Put(_ context.Context, from string, info store.ObjectInfo, body io.Reader) error {
	b, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	if int64(len(b)) != info.Size {
		return store.ErrIncompleteBody
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got[from+":"+info.Key] = b
	return nil
}

func (r *fakeReplicas) Drop(from, bucket, key, etag string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drop = append(r.drop, from+":"+key+"@"+etag)
	return nil
}

// rig is one member answering on loopback, and a client of another.
type rig struct {
	to     cluster.Member
	be     *fakeBackend
	reps   *fakeReplicas
	client *Client
}

func startRig(t *testing.T, withReplicas bool) *rig {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{to: cluster.Member{ID: "n1", Addr: ln.Addr().String()},
		be:   &fakeBackend{chunks: map[store.ChunkID][]byte{}, heads: map[string]store.ObjectInfo{}},
		reps: &fakeReplicas{got: map[string][]byte{}}}
	o := HandlerOptions{Self: r.to, Secret: []byte(testSecret), Backend: r.be, Logger: zerolog.Nop(),
		CheckName: func(bucket, key string) error {
			if strings.ContainsAny(bucket, "_/") || strings.Contains(key, "..") {
				return errors.New("bad name")
			}
			return nil
		}}
	if withReplicas {
		o.Copies = r.reps
	}
	h := NewHandler(o)
	app := fiber.New(fiber.Config{StreamRequestBody: true, DisableStartupMessage: true})
	app.Use(func(c *fiber.Ctx) error {
		if !IsCall(c) {
			return c.SendStatus(http.StatusTeapot)
		}
		var body io.Reader
		if s := c.Context().RequestBodyStream(); s != nil {
			body = s
		}
		h.Serve(c, body)
		return nil
	})
	go app.Listener(ln)
	t.Cleanup(func() { app.Shutdown() })
	r.client = NewClient("n2", []byte(testSecret), 5*time.Second)
	t.Cleanup(r.client.Close)
	return r
}

func TestChunkCalls(t *testing.T) {
	r := startRig(t, false)
	ctx := context.Background()
	id := store.ChunkID{Bucket: "b", Key: "k", ETag: "e", Index: 2}
	data := bytes.Repeat([]byte("0123456789abcdef"), 40) // 640 bytes
	if err := r.client.PutChunk(ctx, r.to, id, 1<<10, data); err != nil {
		t.Fatalf("put: %v", err)
	}
	for _, streamed := range []bool{false, true} {
		r.be.streamed = streamed
		for _, off := range []int64{0, 1, 639, 640} {
			rc, err := r.client.GetChunk(ctx, r.to, ChunkRequest{ID: id, Len: 640, Chunk: 1 << 10, Off: off})
			if err != nil {
				t.Fatalf("get from %d: %v", off, err)
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || !bytes.Equal(got, data[off:]) {
				t.Fatalf("get from %d (streamed %v): %d bytes, %v", off, streamed, len(got), err)
			}
		}
	}
	// A chunk the member does not hold: a cached-only miss.
	_, err := r.client.GetChunk(ctx, r.to, ChunkRequest{ID: store.ChunkID{Bucket: "b", Key: "other", ETag: "e"}, Len: 10, Chunk: 1 << 10, CachedOnly: true})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a miss: %v, want store.ErrNotFound", err)
	}
	// The member's length must agree with the asker's: a shorter chunk
	// than asked is refused by the client, never served short.
	_, err = r.client.GetChunk(ctx, r.to, ChunkRequest{ID: id, Len: 700, Chunk: 1 << 10})
	if err == nil {
		t.Fatal("a chunk answered with another length was accepted")
	}
}

func TestRefusalsCarryTheirCode(t *testing.T) {
	r := startRig(t, false)
	ctx := context.Background()
	id := store.ChunkID{Bucket: "b", Key: "k", ETag: "e"}
	cases := []struct {
		name string
		call func() error
		want error
		code Code
	}{
		{"another chunk size", func() error {
			_, err := r.client.GetChunk(ctx, r.to, ChunkRequest{ID: id, Len: 10, Chunk: 2 << 10})
			return err
		}, ErrChunkSize, CodeChunkSize},
		{"bad bucket name", func() error {
			_, err := r.client.GetChunk(ctx, r.to, ChunkRequest{ID: store.ChunkID{Bucket: "a_b", Key: "k", ETag: "e"}, Len: 10, Chunk: 1 << 10})
			return err
		}, ErrBadRequest, CodeBadRequest},
		{"bad key", func() error { return r.client.Forget(ctx, r.to, "b", "../x", nil) }, ErrBadRequest, CodeBadRequest},
		{"no such key", func() error { _, err := r.client.Head(ctx, r.to, "b", "k", false); return err }, store.ErrNoSuchKey, CodeNoSuchKey},
		{"no such bucket", func() error { _, err := r.client.Head(ctx, r.to, "nobucket", "k", false); return err }, store.ErrNoSuchBucket, CodeNoSuchBucket},
		{"metadata not cached", func() error { _, err := r.client.Head(ctx, r.to, "b", "k", true); return err }, store.ErrNotFound, CodeNotCached},
		{"no write-back copies here", func() error {
			return r.client.PutReplica(ctx, r.to, store.ObjectInfo{Bucket: "b", Key: "k", Size: 1}, strings.NewReader("x"))
		}, ErrNotSupported, CodeNotSupported},
		{"a written version without an ETag", func() error {
			return r.client.Forget(ctx, r.to, "b", "k", &store.ObjectInfo{Bucket: "b", Key: "k"})
		}, ErrBadRequest, CodeBadRequest},
		{"a written version of another key", func() error {
			return r.client.Forget(ctx, r.to, "b", "k", &store.ObjectInfo{Bucket: "b", Key: "j", ETag: "e"})
		}, ErrBadRequest, CodeBadRequest},
	}
	for _, tc := range cases {
		err := tc.call()
		var pe *Error
		if !errors.Is(err, tc.want) || !errors.As(err, &pe) || pe.Code != tc.code || pe.Status != codeStatus[tc.code] || pe.Peer != "n1" {
			t.Errorf("%s: %v, want %s (%v)", tc.name, err, tc.code, tc.want)
		}
	}
	// The origin behind the member is down: Unavailable, 503.
	r.be.err = fmt.Errorf("reading: %w", store.ErrUnavailable)
	_, err := r.client.GetChunk(ctx, r.to, ChunkRequest{ID: id, Len: 10, Chunk: 1 << 10})
	var pe *Error
	if !errors.Is(err, store.ErrUnavailable) || !errors.As(err, &pe) || pe.Status != http.StatusServiceUnavailable {
		t.Errorf("origin down: %v, want 503 Unavailable", err)
	}
	// Anything else is an internal error, 500.
	r.be.err = errors.New("disk on fire")
	if _, err := r.client.Head(ctx, r.to, "b", "k", false); !errors.As(err, &pe) || pe.Code != CodeInternal || pe.Status != 500 {
		t.Errorf("an unexpected failure: %v, want 500 InternalError", err)
	}
}

// rawCall signs a call, lets tamper change it after the signature was
// made (if set), and sends what is left, with body.
func rawCall(t *testing.T, r *rig, method, path, query string, body io.Reader, tamper func(*signed)) *http.Response {
	t.Helper()
	s := signed{method: method, path: path, query: query, from: "n2", stamp: stamp(time.Now())}
	sig := s.signature([]byte(testSecret))
	if tamper != nil {
		tamper(&s)
	}
	req, err := http.NewRequest(s.method, "http://"+r.to.Addr+s.path+"?"+s.query, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(HeaderFrom, s.from)
	req.Header.Set(HeaderTime, s.stamp)
	req.Header.Set(HeaderSig, sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func TestSignatureCoversTheRequest(t *testing.T) {
	r := startRig(t, false)
	q := ChunkRequest{ID: store.ChunkID{Bucket: "b", Key: "k", ETag: "e"}, Len: 10, Chunk: 1 << 10}.query().Encode()
	cases := map[string]func(*signed){
		"another sender":  func(s *signed) { s.from = "n3" },
		"another stamp":   func(s *signed) { s.stamp = stamp(time.Now().Add(-time.Minute)) },
		"no sender":       func(s *signed) { s.from = "" },
		"a bad timestamp": func(s *signed) { s.stamp = "soon" },
		"another route":   func(s *signed) { s.path = RouteHead },
	}
	for name, tamper := range cases {
		if resp := rawCall(t, r, "GET", RouteChunk, q, nil, tamper); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, resp.StatusCode)
		}
	}
	// A well-signed request from too long ago or too far ahead (a
	// replay, or a clock far off).
	for _, skew := range []time.Duration{-MaxSkew - time.Minute, MaxSkew + time.Minute} {
		s := signed{method: "GET", path: RoutePing, from: "n2", stamp: stamp(time.Now().Add(skew))}
		if _, err := verify([]byte(testSecret), s, s.signature([]byte(testSecret)), time.Now()); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("skew %v: %v, want Unauthenticated", skew, err)
		}
		if _, err := verify([]byte(testSecret), s, s.signature([]byte(testSecret)), time.Now().Add(skew)); err != nil {
			t.Errorf("skew %v, checked at its own time: %v", skew, err)
		}
	}
	// The signature was made for another query (a captured request
	// replayed for another chunk).
	resp := rawCall(t, r, "GET", RouteChunk, q, nil, func(s *signed) { s.query = strings.Replace(q, "index=0", "index=1", 1) })
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a signature over another query: %d, want 403", resp.StatusCode)
	}
	bad := NewClient("n2", []byte("another-secret-entirely"), time.Second)
	defer bad.Close()
	if err := bad.Ping(context.Background(), r.to); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("a wrong secret: %v, want Unauthenticated", err)
	}
	if r.be.asked != 0 {
		t.Fatalf("the backend was asked %d times by refused calls", r.be.asked)
	}
	if err := r.client.Ping(context.Background(), r.to); err != nil {
		t.Fatalf("the right secret: %v", err)
	}
}

func TestHugeChunkRefusedBeforeAllocation(t *testing.T) {
	// A signed PUT of a "chunk" of a terabyte must be refused on its
	// query alone (allocating it first killed the node).
	r := startRig(t, false)
	for _, sizes := range [][2]int64{{1 << 40, 1 << 40}, {1 << 40, 1 << 10}} {
		q := ChunkRequest{ID: store.ChunkID{Bucket: "b", Key: "k", ETag: "e"}, Len: sizes[0], Chunk: sizes[1]}.query().Encode()
		resp := rawCall(t, r, "PUT", RouteChunk, q, strings.NewReader("tiny"), nil)
		if resp.StatusCode != http.StatusConflict && resp.StatusCode != http.StatusBadRequest {
			t.Errorf("len %d chunk %d: %d, want 409 or 400", sizes[0], sizes[1], resp.StatusCode)
		}
	}
	// A body shorter than its chunk is an incomplete body, not a chunk.
	q := ChunkRequest{ID: store.ChunkID{Bucket: "b", Key: "k", ETag: "e"}, Len: 100, Chunk: 1 << 10}.query().Encode()
	if resp := rawCall(t, r, "PUT", RouteChunk, q, strings.NewReader("tiny"), nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a short body: %d, want 400", resp.StatusCode)
	}
	if len(r.be.stored) != 0 {
		t.Fatalf("stored %v", r.be.stored)
	}
}

func TestForgetHeadAndReplicas(t *testing.T) {
	r := startRig(t, true)
	ctx := context.Background()
	info := store.ObjectInfo{Bucket: "b", Key: "k", ETag: "v2", Size: 5}
	if err := r.client.Forget(ctx, r.to, "b", "k", &info); err != nil {
		t.Fatal(err)
	}
	if err := r.client.Forget(ctx, r.to, "b", "j", nil); err != nil {
		t.Fatal(err)
	}
	if strings.Join(r.be.forgot, ",") != "n2:b/k,n2:b/j" || r.be.written != nil {
		t.Fatalf("forgot %v, last written %v", r.be.forgot, r.be.written)
	}
	r.be.heads["b/k"] = info
	got, err := r.client.Head(ctx, r.to, "b", "k", true)
	if err != nil || got.ETag != info.ETag || got.Size != info.Size {
		t.Fatalf("head: %+v, %v", got, err)
	}
	if err := r.client.PutReplica(ctx, r.to, info, strings.NewReader("hello")); err != nil {
		t.Fatal(err)
	}
	if string(r.reps.got["n2:k"]) != "hello" {
		t.Fatalf("replicas: %v", r.reps.got)
	}
	if err := r.client.PutReplica(ctx, r.to, info, strings.NewReader("hel")); !errors.Is(err, store.ErrIncompleteBody) {
		t.Fatalf("a short copy: %v, want IncompleteBody", err)
	}
	if err := r.client.DropReplica(ctx, r.to, "b", "k", "v2"); err != nil || len(r.reps.drop) != 1 || r.reps.drop[0] != "n2:k@v2" {
		t.Fatalf("drop: %v %v", err, r.reps.drop)
	}
	// Ping checks who answers.
	if err := r.client.Ping(ctx, cluster.Member{ID: "n9", Addr: r.to.Addr}); err == nil {
		t.Fatal("a member answering under another ID passed its ping")
	}
}
