package peer

import (
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/granary-dev/granary/store"
)

// values parses r's query as a member receives it.
func values(t *testing.T, r ChunkRequest) url.Values {
	t.Helper()
	q, err := url.ParseQuery(chunkQuery(r).Encode())
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestChunkRequestRoundTrip: a chunk call's query parses back to its
// request, whatever its names hold, and is written as url.Values writes
// it (keys in order, values escaped), byte for byte.
func TestChunkRequestRoundTrip(t *testing.T) {
	for _, r := range []ChunkRequest{
		{ID: store.ChunkID{Bucket: "b", Key: "a key/with ünïcode & = ? + %", ETag: `"e-3"`, Index: 7}, Len: 100, Chunk: 1 << 20},
		{ID: store.ChunkID{Bucket: "b", Key: "k", ETag: "e", Index: 0}, Len: 100, Chunk: 100, Off: 99, CachedOnly: true},
		{ID: store.ChunkID{Bucket: "bucket.x-y", Key: "", ETag: "", Index: 1 << 40}, Len: 8 << 20, Chunk: 8 << 20, Off: 1},
	} {
		q := values(t, r)
		got, err := parseChunkRequest(q.Get)
		if err != nil || got != r {
			t.Fatalf("round trip of %+v: %+v, %v", r, got, err)
		}
		if enc := chunkQuery(r).Encode(); enc != q.Encode() {
			t.Errorf("%+v: %q, url.Values writes %q", r, enc, q.Encode())
		}
	}
}

func TestParseChunkRequestRefusesBadNumbers(t *testing.T) {
	for _, name := range []string{"index", "len", "chunk", "off"} {
		q := values(t, ChunkRequest{ID: store.ChunkID{Bucket: "b", Key: "k", ETag: "e"}, Len: 1, Chunk: 1})
		q.Set(name, "12x")
		if _, err := parseChunkRequest(q.Get); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%s=12x: %v, want ErrBadRequest", name, err)
		}
	}
	q := values(t, ChunkRequest{ID: store.ChunkID{Bucket: "b", Key: "k", ETag: "e"}, Len: 1, Chunk: 1})
	q.Del("len")
	if _, err := parseChunkRequest(q.Get); !errors.Is(err, ErrBadRequest) {
		t.Errorf("no len: %v, want ErrBadRequest", err)
	}
}

func TestChunkRequestCheck(t *testing.T) {
	ok := ChunkRequest{ID: store.ChunkID{Bucket: "b", Key: "k", ETag: "e", Index: 3}, Len: 100, Chunk: 100, Off: 100}
	if err := ok.Check(100); err != nil {
		t.Fatalf("a good request: %v", err)
	}
	bad := func(f func(*ChunkRequest)) ChunkRequest { r := ok; f(&r); return r }
	cases := []struct {
		name string
		r    ChunkRequest
		want error
	}{
		{"another chunk size", bad(func(r *ChunkRequest) { r.Chunk = 200 }), ErrChunkSize},
		{"a terabyte", bad(func(r *ChunkRequest) { r.Chunk, r.Len = 1<<40, 1<<40 }), ErrChunkSize},
		{"longer than a chunk", bad(func(r *ChunkRequest) { r.Len = 101 }), ErrBadRequest},
		{"empty", bad(func(r *ChunkRequest) { r.Len, r.Off = 0, 0 }), ErrBadRequest},
		{"offset past the end", bad(func(r *ChunkRequest) { r.Off = 101 }), ErrBadRequest},
		{"negative offset", bad(func(r *ChunkRequest) { r.Off = -1 }), ErrBadRequest},
		{"negative index", bad(func(r *ChunkRequest) { r.ID.Index = -1 }), ErrBadRequest},
		{"no etag", bad(func(r *ChunkRequest) { r.ID.ETag = "" }), ErrBadRequest},
	}
	for _, tc := range cases {
		if err := tc.r.Check(100); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestObjectHeaderRoundTrip(t *testing.T) {
	info := store.ObjectInfo{Bucket: "b", Key: "k", ETag: "e", Size: 5}
	v, err := encodeObject(info)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeObject(v, "b", "k")
	if err != nil || got.ETag != "e" || got.Size != 5 {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for name, dec := range map[string]func() error{
		"another key": func() error { _, err := decodeObject(v, "b", "other"); return err },
		"not base64":  func() error { _, err := decodeObject("%%%", "b", "k"); return err },
		"not JSON":    func() error { _, err := decodeObject("bm90IGpzb24=", "b", "k"); return err },
	} {
		if err := dec(); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%s: %v, want ErrBadRequest", name, err)
		}
	}
}

func TestEveryCodeHasAStatusAndItsSentinel(t *testing.T) {
	for _, c := range codeErrors {
		st, ok := codeStatus[c.code]
		if !ok || st < 400 {
			t.Errorf("code %s has status %d", c.code, st)
		}
		e := &Error{Peer: "n1", Status: st, Code: c.code}
		if !errors.Is(e, c.err) {
			t.Errorf("an *Error with code %s does not match %v", c.code, c.err)
		}
		if codeOf(c.err) != c.code {
			t.Errorf("%v answers as %s, want %s", c.err, codeOf(c.err), c.code)
		}
	}
	if codeOf(errors.New("something else")) != CodeInternal {
		t.Error("an unknown error is not InternalError")
	}
	if errors.Is(&Error{Code: CodeNoSuchKey, Status: 404}, store.ErrNotFound) {
		t.Error("NoSuchKey matches a cache miss")
	}
}

func TestDecodeErrorOfAnotherServer(t *testing.T) {
	// An answer that is not the protocol's (a proxy's page, an older
	// node) keeps its status and text, and matches no sentinel.
	e := decodeError("n2", http.StatusNotFound, []byte("<Error><Code>NoSuchKey</Code></Error>"))
	if e.Code != "" || e.Status != 404 || errors.Is(e, store.ErrNoSuchKey) || errors.Is(e, store.ErrNotFound) {
		t.Fatalf("foreign 404: %+v", e)
	}
	// A code whose status does not match is not trusted either.
	e = decodeError("n2", http.StatusOK, []byte(`{"code":"NoSuchKey","message":"x"}`))
	if e.Code != "" {
		t.Fatalf("code with the wrong status: %+v", e)
	}
}
