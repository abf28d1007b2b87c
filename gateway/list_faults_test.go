// Listings in front of a sick origin, as metadata is: a cached page past
// its TTL is answered at once from the cache and revalidated in the
// background, and a hung origin never holds a LIST or the engine's Close
// for its timeouts.
package gateway

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/granary-dev/granary/internal/faultproxy"
	"github.com/granary-dev/granary/internal/goroutines"
	"github.com/granary-dev/granary/internal/poll"
	"github.com/granary-dev/granary/store"
)

// list lists bucket, failing t if it took longer than r.bound or failed,
// and returns the keys listed.
func (r *faultRig) list(t *testing.T, bucket string) []string {
	t.Helper()
	start := time.Now()
	page, err := r.e.List(context.Background(), bucket, store.ListOptions{})
	if d := time.Since(start); d > r.bound {
		t.Fatalf("LIST %s took %v, more than %v", bucket, d, r.bound)
	}
	if err != nil {
		t.Fatalf("LIST %s: %v", bucket, err)
	}
	keys := make([]string, len(page.Objects))
	for i, o := range page.Objects {
		keys[i] = o.Key
	}
	return keys
}

// TestStaleListServedWithoutWaiting: with an origin timeout of a minute
// and the origin hung, a LIST past the TTL is answered from the cache
// long before one origin timeout could end (before, it waited for it: a
// node's three tries took 16 s), as a GET of a cached object is; and
// Close ends the revalidation waiting on the origin at once.
func TestStaleListServedWithoutWaiting(t *testing.T) {
	before := goroutines.Snapshot()
	r := newFaultRigTimeout(t, map[string]Freshness{"-ttl": {Mode: TTL, TTL: time.Minute}}, time.Minute)
	b := r.bucket + "-ttl"
	var want []string
	for i := range 3 {
		key := fmt.Sprintf("k%d", i)
		r.put(t, b, key, []byte(key))
		want = append(want, key)
	}
	if got := r.list(t, b); !slices.Equal(got, want) {
		t.Fatalf("LIST with the origin up: %q, want %q", got, want)
	}
	if err := r.proxy.Set(faultproxy.Hang); err != nil {
		t.Fatal(err)
	}
	// Each LIST is past the TTL. A revalidation may first fail at once on
	// a pooled connection the proxy dropped (and keep the page another
	// TTL); the next one waits on the hung origin.
	poll.Until(t, "a list revalidation waiting on the hung origin", func() bool {
		r.clock.Advance(2 * time.Minute)
		if got := r.list(t, b); !slices.Equal(got, want) {
			t.Fatalf("stale LIST: %q, want %q", got, want)
		}
		return r.e.revalidating() == 1
	})
	for range 5 {
		r.clock.Advance(2 * time.Minute)
		if got := r.list(t, b); !slices.Equal(got, want) {
			t.Fatalf("stale LIST with a revalidation waiting: %q, want %q", got, want)
		}
		if got, err := r.read(t, b, "k0"); err != nil || string(got) != "k0" {
			t.Fatalf("stale GET with a revalidation waiting: %q, %v", got, err)
		}
	}
	start := time.Now()
	r.close()
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("Close waited %v for a list revalidation", d)
	}
	if err := goroutines.Leaked(before, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestStaleListRevalidatedInTheBackground: a LIST past the TTL is
// answered from the cache, and an object added at the origin behind the
// node's back arrives with the background revalidation.
func TestStaleListRevalidatedInTheBackground(t *testing.T) {
	// Nothing here waits on a sick origin: a timeout generous for a busy
	// machine.
	r := newFaultRigTimeout(t, map[string]Freshness{"-ttl": {Mode: TTL, TTL: time.Minute}}, 5*time.Second)
	defer r.close()
	b := r.bucket + "-ttl"
	r.put(t, b, "old", []byte("old"))
	if got := r.list(t, b); !slices.Equal(got, []string{"old"}) {
		t.Fatalf("first LIST: %q", got)
	}
	if _, err := r.g.Origin().Put(context.Background(), b, "new", bytes.NewReader([]byte("new")), 3, store.ObjectMeta{}); err != nil {
		t.Fatal(err)
	}
	if got := r.list(t, b); !slices.Equal(got, []string{"old"}) {
		t.Fatalf("LIST within the TTL: %q, want the cached page", got)
	}
	r.clock.Advance(2 * time.Minute)
	if got := r.list(t, b); !slices.Equal(got, []string{"old"}) && !slices.Equal(got, []string{"new", "old"}) {
		t.Fatalf("LIST past the TTL: %q", got)
	}
	poll.Until(t, "the revalidation to bring the new object", func() bool {
		return slices.Equal(r.list(t, b), []string{"new", "old"})
	})
}
