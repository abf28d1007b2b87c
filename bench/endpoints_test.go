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
