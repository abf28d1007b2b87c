package peer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
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
	pending  map[string]bool // "bucket/key" of writes waiting for the origin
	err      error
	asked    int
	streamed bool  // answer chunks as a stream, not whole bytes
	chunk    int64 // the chunk size; 0: 1 KiB
}

func (b *fakeBackend) ChunkSize() int64 {
	if b.chunk > 0 {
		return b.chunk
	}
	return 1 << 10
}

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

func (b *fakeBackend) Pending(bucket, key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pending[bucket+"/"+key]
}

func (b *fakeBackend) ForgetAll(from string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.forgot = append(b.forgot, from+":*")
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

func startRig(t testing.TB, withReplicas bool) *rig {
	t.Helper()
	return startRigWith(t, withReplicas, nil)
}

// startRigWith is startRig with opt, if set, applied to the handler's
// options.
func startRigWith(t testing.TB, withReplicas bool, opt func(*HandlerOptions)) *rig {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return startRigOn(t, ln, withReplicas, opt)
}

// startRigOn is startRigWith serving on ln.
func startRigOn(t testing.TB, ln net.Listener, withReplicas bool, opt func(*HandlerOptions)) *rig {
	t.Helper()
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
	if opt != nil {
		opt(&o)
	}
	h := NewHandler(o)
	app := fiber.New(fiber.Config{StreamRequestBody: true, DisableStartupMessage: true})
	app.Use(func(c *fiber.Ctx) error {
		if !IsCall(c) {
			return c.SendStatus(http.StatusTeapot)
		}
		var body *eofReader
		if s := c.Context().RequestBodyStream(); s != nil {
			body = &eofReader{r: s}
		}
		if body == nil {
			h.Serve(c, nil)
			return nil
		}
		h.Serve(c, body)
		// A refused body is read and dropped, as the node's listener
		// does with a lingering close: closing at once would reset the
		// connection under a client still sending, which then sees a
		// broken pipe instead of the answer.
		if body.n == 0 && c.Response().StatusCode() >= http.StatusBadRequest {
			io.Copy(io.Discard, io.LimitReader(body, 1<<20))
		}
		if !body.eof {
			// What is left of the body would be read as the next request.
			c.Response().SetConnectionClose()
		}
		return nil
	})
	go app.Listener(ln)
	t.Cleanup(func() { app.Shutdown() })
	r.client = NewClient("n2", []byte(testSecret), 5*time.Second)
	t.Cleanup(r.client.Close)
	return r
}

// eofReader notes whether its reader reached its end.
type eofReader struct {
	r   io.Reader
	n   int64 // bytes read
	eof bool
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	e.n += int64(n)
	e.eof = e.eof || err == io.EOF
	return n, err
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

// rawCall sends a call signed by r.client, after tamper (if set) changed
// the request, with body (if set) bound to the signature.
func rawCall(t *testing.T, r *rig, method, path, query string, body io.Reader, tamper func(*http.Request)) *http.Response {
	t.Helper()
	req := signedRequest(t, r, method, path, query)
	r.client.attach(req, req.Header.Get(HeaderSig), body)
	if tamper != nil {
		tamper(req)
	}
	return send(t, req)
}

// signedRequest is a request r.client signed for r's member.
func signedRequest(t *testing.T, r *rig, method, path, query string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+r.to.Addr+path+"?"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.client.sign(req, r.to.ID)
	return req
}

// send sends req and returns its answer, body read.
func send(t *testing.T, req *http.Request) *http.Response {
	t.Helper()
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
	q := chunkQuery(ChunkRequest{ID: store.ChunkID{Bucket: "b", Key: "k", ETag: "e"}, Len: 10, Chunk: 1 << 10}).Encode()
	set := func(k, v string) func(*http.Request) { return func(req *http.Request) { req.Header.Set(k, v) } }
	cases := map[string]func(*http.Request){
		"another sender":             set(HeaderFrom, "n3"),
		"another recipient":          set(HeaderTo, "n9"),
		"another stamp":              set(HeaderTime, stamp(time.Now().Add(-time.Minute))),
		"another nonce":              set(HeaderNonce, "1.1"),
		"no sender":                  func(req *http.Request) { req.Header.Del(HeaderFrom) },
		"no nonce":                   func(req *http.Request) { req.Header.Del(HeaderNonce) },
		"a bad timestamp":            set(HeaderTime, "soon"),
		"another route":              func(req *http.Request) { req.URL.Path = RouteHead },
		"another query":              func(req *http.Request) { req.URL.RawQuery = strings.Replace(q, "index=0", "index=1", 1) },
		"a forged object":            set(HeaderObject, "e30="),
		"a body trailer as a header": set(TrailerBody, "00"),
	}
	for name, tamper := range cases {
		if resp := rawCall(t, r, "GET", RouteChunk, q, nil, tamper); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, resp.StatusCode)
		}
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

func TestSignatureSkew(t *testing.T) {
	// A well-signed request from too long ago or too far ahead (a
	// replay, or a clock far off).
	secret := []byte(testSecret)
	for _, skew := range []time.Duration{-MaxSkew - time.Minute, MaxSkew + time.Minute} {
		s := signed{method: "GET", path: RoutePing}
		addHeader(&s, HeaderFrom, "n2")
		addHeader(&s, HeaderTo, "n1")
		addHeader(&s, HeaderTime, stamp(time.Now().Add(skew)))
		if _, err := verify(newSecretMAC(secret), "n1", s, s.signature(newSecretMAC(secret)), time.Now()); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("skew %v: %v, want Unauthenticated", skew, err)
		}
		if _, err := verify(newSecretMAC(secret), "n1", s, s.signature(newSecretMAC(secret)), time.Now().Add(skew)); err != nil {
			t.Errorf("skew %v, checked at its own time: %v", skew, err)
		}
		if _, err := verify(newSecretMAC(secret), "n3", s, s.signature(newSecretMAC(secret)), time.Now().Add(skew)); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("skew %v, checked by another node: %v, want Unauthenticated", skew, err)
		}
	}
}

func TestReplayRefused(t *testing.T) {
	r := startRig(t, false)
	req := signedRequest(t, r, "POST", RouteForget, "bucket=b&key=k")
	again := req.Clone(context.Background())
	if resp := send(t, req); resp.StatusCode != http.StatusOK {
		t.Fatalf("the call: %d", resp.StatusCode)
	}
	if resp := send(t, again); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("the same call again: %d, want 403", resp.StatusCode)
	}
	if len(r.be.forgot) != 1 {
		t.Fatalf("forgot %v: the replay reached the backend", r.be.forgot)
	}
}

func TestBodyBoundToSignature(t *testing.T) {
	r := startRig(t, true)
	genuine, other := bytes.Repeat([]byte("g"), 1<<10), bytes.Repeat([]byte("X"), 1<<10)
	chunkQ := chunkQuery(ChunkRequest{ID: store.ChunkID{Bucket: "b", Key: "k", ETag: "e"}, Len: 1 << 10, Chunk: 1 << 10}).Encode()
	info, _ := encodeObject(store.ObjectInfo{Bucket: "b", Key: "k", ETag: "e", Size: 1 << 10})
	for _, call := range []struct{ name, method, path, query string }{
		{"chunk", "PUT", RouteChunk, chunkQ},
		{"replica", "PUT", RouteReplica, "bucket=b&key=k"},
	} {
		// A captured call's headers and trailer with other bytes.
		req := signedRequest(t, r, call.method, call.path, call.query)
		req.Header.Set(HeaderObject, info)
		// The object header is signed: sign again with it.
		r.client.sign(req, r.to.ID)
		sig := req.Header.Get(HeaderSig)
		sum := sha256.Sum256(genuine)
		req.Trailer = http.Header{TrailerBody: {bodyMAC(newSecretMAC([]byte(testSecret)), sig, sum[:])}}
		req.ContentLength = -1
		req.Body = io.NopCloser(bytes.NewReader(other))
		if resp := send(t, req); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: other bytes under the genuine trailer: %d, want 403", call.name, resp.StatusCode)
		}
		// No trailer at all.
		req = signedRequest(t, r, call.method, call.path, call.query)
		req.Header.Set(HeaderObject, info)
		r.client.sign(req, r.to.ID)
		req.ContentLength = -1
		req.Body = io.NopCloser(bytes.NewReader(genuine))
		if resp := send(t, req); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: no trailer: %d, want 403", call.name, resp.StatusCode)
		}
		// Longer than declared, well signed.
		long := func(req *http.Request) { req.Header.Set(HeaderObject, info); r.client.sign(req, r.to.ID) }
		req = signedRequest(t, r, call.method, call.path, call.query)
		long(req)
		r.client.attach(req, req.Header.Get(HeaderSig), bytes.NewReader(append(genuine, '!')))
		if resp := send(t, req); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: a body longer than declared: %d, want 400", call.name, resp.StatusCode)
		}
	}
	if len(r.be.stored) != 0 || len(r.reps.got) != 0 {
		t.Fatalf("stored %v, copies %v", r.be.stored, r.reps.got)
	}
	// The genuine calls pass.
	ctx := context.Background()
	if err := r.client.PutChunk(ctx, r.to, store.ChunkID{Bucket: "b", Key: "k", ETag: "e"}, 1<<10, genuine); err != nil {
		t.Fatal(err)
	}
	if err := r.client.PutReplica(ctx, r.to, store.ObjectInfo{Bucket: "b", Key: "k", ETag: "e", Size: 1 << 10}, bytes.NewReader(genuine)); err != nil {
		t.Fatal(err)
	}
	if len(r.be.stored) != 1 || !bytes.Equal(r.reps.got["n2:k"], genuine) {
		t.Fatalf("stored %v, copies %v", r.be.stored, r.reps.got)
	}
}

func TestHugeChunkRefusedBeforeAllocation(t *testing.T) {
	// A signed PUT of a "chunk" of a terabyte must be refused on its
	// query alone (allocating it first killed the node).
	r := startRig(t, false)
	for _, sizes := range [][2]int64{{1 << 40, 1 << 40}, {1 << 40, 1 << 10}} {
		q := chunkQuery(ChunkRequest{ID: store.ChunkID{Bucket: "b", Key: "k", ETag: "e"}, Len: sizes[0], Chunk: sizes[1]}).Encode()
		resp := rawCall(t, r, "PUT", RouteChunk, q, strings.NewReader("tiny"), nil)
		if resp.StatusCode != http.StatusConflict && resp.StatusCode != http.StatusBadRequest {
			t.Errorf("len %d chunk %d: %d, want 409 or 400", sizes[0], sizes[1], resp.StatusCode)
		}
	}
	// A body shorter than its chunk is an incomplete body, not a chunk.
	q := chunkQuery(ChunkRequest{ID: store.ChunkID{Bucket: "b", Key: "k", ETag: "e"}, Len: 100, Chunk: 1 << 10}).Encode()
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
	if err := r.client.ForgetAll(ctx, r.to); err != nil {
		t.Fatal(err)
	}
	if strings.Join(r.be.forgot, ",") != "n2:b/k,n2:b/j,n2:*" || r.be.written != nil {
		t.Fatalf("forgot %v, last written %v", r.be.forgot, r.be.written)
	}
	r.be.mu.Lock()
	r.be.pending = map[string]bool{"b/k": true}
	r.be.mu.Unlock()
	for key, want := range map[string]bool{"k": true, "j": false} {
		if got, err := r.client.Pending(ctx, r.to, "b", key); err != nil || got != want {
			t.Fatalf("pending b/%s: %v, %v; want %v", key, got, err, want)
		}
	}
	r.be.heads["b/k"] = info
	got, err := r.client.Head(ctx, r.to, "b", "k", true)
	if err != nil || got.ETag != info.ETag || got.Size != info.Size {
		t.Fatalf("head: %+v, %v", got, err)
	}
	// A backend without stale answers gives its cached one.
	if got, err := r.client.HeadStale(ctx, r.to, "b", "k"); err != nil || got.ETag != info.ETag {
		t.Fatalf("stale head: %+v, %v", got, err)
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

// TestCertRequiredBeforeTheSignature: with VerifiedCert denying the
// connection, well-signed calls are refused with their own code and the
// backend is never asked; allowing it, the same client is served.
func TestCertRequiredBeforeTheSignature(t *testing.T) {
	var verified atomic.Bool
	r := startRigWith(t, true, func(o *HandlerOptions) {
		o.VerifiedCert = func(*fiber.Ctx) bool { return verified.Load() }
	})
	ctx := context.Background()
	id := store.ChunkID{Bucket: "b", Key: "k", ETag: "e"}
	_, getErr := r.client.GetChunk(ctx, r.to, ChunkRequest{ID: id, Len: 10, Chunk: 1 << 10})
	for name, err := range map[string]error{
		"ping":      r.client.Ping(ctx, r.to),
		"get chunk": getErr,
		"put chunk": r.client.PutChunk(ctx, r.to, id, 1<<10, []byte("0123456789")),
		"forget":    r.client.Forget(ctx, r.to, "b", "k", nil),
	} {
		var pe *Error
		if !errors.Is(err, ErrCertRequired) || !errors.As(err, &pe) || pe.Status != http.StatusForbidden || pe.Code != CodeCertRequired {
			t.Errorf("%s without a verified certificate: %v, want 403 %s", name, err, CodeCertRequired)
		}
	}
	if r.be.asked != 0 || len(r.be.stored) != 0 || len(r.be.forgot) != 0 {
		t.Fatalf("refused calls reached the backend: asked %d, stored %d, forgot %d", r.be.asked, len(r.be.stored), len(r.be.forgot))
	}
	verified.Store(true)
	if err := r.client.Ping(ctx, r.to); err != nil {
		t.Fatalf("with a verified certificate: %v", err)
	}
}

// TestFirstCall: one call answers an object's info and its first chunk
// (the whole object if it is one chunk or less, none if it is empty); a
// missing object or bucket is the backend's error; a member cutting
// objects otherwise is refused before the backend is asked.
func TestFirstCall(t *testing.T) {
	r := startRig(t, false)
	ctx := context.Background()
	data := bytes.Repeat([]byte("0123456789abcdef"), 100) // 1,600 bytes: two chunks of 1 KiB
	info := store.ObjectInfo{Bucket: "b", Key: "k", ETag: "e1", Size: int64(len(data))}
	r.be.heads["b/k"] = info
	r.be.chunks[store.ChunkID{Bucket: "b", Key: "k", ETag: "e1"}] = data[:1<<10]
	r.be.heads["b/small"] = store.ObjectInfo{Bucket: "b", Key: "small", ETag: "e2", Size: 3}
	r.be.chunks[store.ChunkID{Bucket: "b", Key: "small", ETag: "e2"}] = data[:3]
	r.be.heads["b/empty"] = store.ObjectInfo{Bucket: "b", Key: "empty", ETag: "e3"}
	for _, streamed := range []bool{false, true} {
		r.be.streamed = streamed
		for key, want := range map[string][]byte{"k": data[:1<<10], "small": data[:3], "empty": {}} {
			got, rc, err := r.client.GetFirst(ctx, r.to, "b", key, 1<<10)
			if err != nil {
				t.Fatalf("first of %s: %v", key, err)
			}
			body, err := io.ReadAll(rc)
			rc.Close()
			if w := r.be.heads["b/"+key]; err != nil || !bytes.Equal(body, want) || got.ETag != w.ETag || got.Size != w.Size || got.Key != key {
				t.Fatalf("first of %s (streamed %v): %+v, %d bytes, %v", key, streamed, got, len(body), err)
			}
		}
	}
	if _, _, err := r.client.GetFirst(ctx, r.to, "b", "none", 1<<10); !errors.Is(err, store.ErrNoSuchKey) {
		t.Fatalf("first of a missing key: %v, want NoSuchKey", err)
	}
	if _, _, err := r.client.GetFirst(ctx, r.to, "nobucket", "k", 1<<10); !errors.Is(err, store.ErrNoSuchBucket) {
		t.Fatalf("first in a missing bucket: %v, want NoSuchBucket", err)
	}
	asked := r.be.asked
	if _, _, err := r.client.GetFirst(ctx, r.to, "b", "k", 2<<10); !errors.Is(err, ErrChunkSize) || r.be.asked != asked {
		t.Fatalf("first with another chunk size: %v (backend asked %d times), want %s", err, r.be.asked-asked, CodeChunkSize)
	}
	// The info must name the object asked for: an owner answering for
	// another is refused, never cached under this key.
	r.be.heads["b/alias"] = info
	if _, _, err := r.client.GetFirst(ctx, r.to, "b", "alias", 1<<10); err == nil {
		t.Fatal("an answer for another object was accepted")
	}
}
