// Shared listings over the wire: a member's coverage and a page from its
// catalog; a prefix it does not list is store.ErrNotFound, a bad page
// size a bad request; a member without a catalog lists nothing.
package peer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/granary-dev/granary/store"
)

// listingBackend is a fakeBackend with a catalog of one prefix.
type listingBackend struct {
	*fakeBackend
	covers []Cover
}

func (b listingBackend) Coverage() ([]Cover, error) { return b.covers, nil }

func (b listingBackend) ListCached(_ context.Context, bucket string, opts store.ListOptions) (store.ListPage, error) {
	if bucket != "b" || !strings.HasPrefix(opts.Prefix, "d/") {
		return store.ListPage{}, store.ErrNotFound
	}
	return store.ListPage{Objects: []store.ObjectInfo{{Key: opts.Prefix + "x", Size: int64(opts.MaxKeys)}}}, nil
}

func TestSharedListings(t *testing.T) {
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	covers := []Cover{{Bucket: "b", Prefix: "d/", At: at}}
	r := startRigWith(t, false, func(o *HandlerOptions) {
		o.Backend = listingBackend{fakeBackend: o.Backend.(*fakeBackend), covers: covers}
	})
	ctx := context.Background()
	got, err := r.client.Coverage(ctx, r.to)
	if err != nil || len(got) != 1 || got[0].Bucket != "b" || got[0].Prefix != "d/" || !got[0].At.Equal(at) {
		t.Fatalf("coverage: %+v, %v", got, err)
	}
	page, err := r.client.ListCached(ctx, r.to, "b", store.ListOptions{Prefix: "d/e", MaxKeys: 7})
	if err != nil || len(page.Objects) != 1 || page.Objects[0].Key != "d/ex" || page.Objects[0].Size != 7 {
		t.Fatalf("page: %+v, %v", page, err)
	}
	if _, err := r.client.ListCached(ctx, r.to, "b", store.ListOptions{Prefix: "z/", MaxKeys: 7}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a prefix the catalog does not list: %v, want ErrNotFound", err)
	}
	if _, err := r.client.ListCached(ctx, r.to, "b", store.ListOptions{Prefix: "d/", MaxKeys: 0}); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("max-keys 0: %v, want a bad request", err)
	}
	plain := startRig(t, false) // a backend without a catalog
	if got, err := plain.client.Coverage(ctx, plain.to); err != nil || len(got) != 0 {
		t.Fatalf("coverage without a catalog: %+v, %v", got, err)
	}
	if _, err := plain.client.ListCached(ctx, plain.to, "b", store.ListOptions{Prefix: "d/", MaxKeys: 5}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a page without a catalog: %v, want ErrNotFound", err)
	}
}
