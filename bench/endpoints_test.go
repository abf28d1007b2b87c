// Endpoints sends reads to each endpoint in turn and writes to the first.
package bench

import (
	"bytes"
	"context"
	"testing"
)

func TestEndpointsTakeTurns(t *testing.T) {
	ctx := context.Background()
	a, b, c := newMemStore(nil, 0), newMemStore(nil, 0), newMemStore(nil, 0)
	s := &Endpoints{Stores: []Store{a, b, c}}
	if err := s.Put(ctx, "k", bytes.NewReader([]byte("data")), 4); err != nil {
		t.Fatal(err)
	}
	if len(a.objs) != 1 || len(b.objs)+len(c.objs) != 0 {
		t.Fatal("a write went elsewhere than the first endpoint")
	}
	for _, m := range []*memStore{b, c} { // the same service behind every endpoint
		m.objs["k"] = a.objs["k"]
	}
	for range 7 {
		if _, err := s.Read(ctx, "k", 0, 4, true); err != nil {
			t.Fatal(err)
		}
	}
	if a.reads["k"] != 3 || b.reads["k"] != 2 || c.reads["k"] != 2 {
		t.Fatalf("reads per endpoint %d, %d, %d; want 3, 2, 2", a.reads["k"], b.reads["k"], c.reads["k"])
	}
}

func TestOwnersSendEachReadToItsOwner(t *testing.T) {
	ctx := context.Background()
	a, b := newMemStore(nil, 0), newMemStore(nil, 0)
	// Keys "a..." and byte offsets under 10 belong to a, the rest to b.
	s := &Owners{Stores: []Store{a, b}, Owner: func(key string, off int64) int {
		if key[0] == 'a' && off < 10 {
			return 0
		}
		return 1
	}}
	for _, k := range []string{"a1", "b1"} {
		if err := s.Put(ctx, k, bytes.NewReader(make([]byte, 20)), 20); err != nil {
			t.Fatal(err)
		}
		b.objs[k] = a.objs[k] // one service behind both
	}
	if len(a.objs) != 2 {
		t.Fatal("a write went elsewhere than the first member")
	}
	for _, r := range []struct {
		key string
		off int64
	}{{"a1", 0}, {"a1", 12}, {"b1", 0}, {"a1", 5}} {
		if _, err := s.Read(ctx, r.key, r.off, 4, false); err != nil {
			t.Fatal(err)
		}
	}
	if a.reads["a1"] != 2 || b.reads["a1"] != 1 || b.reads["b1"] != 1 || a.reads["b1"] != 0 {
		t.Fatalf("reads: a %v, b %v", a.reads, b.reads)
	}
}
