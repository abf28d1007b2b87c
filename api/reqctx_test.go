package api

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/store"
)

// idOrigin records the request id of each Stat's context.
type idOrigin struct {
	store.Origin
	mu  sync.Mutex
	ids []string
}

func (o *idOrigin) Stat(ctx context.Context, bucket, key string) (store.ObjectInfo, error) {
	o.mu.Lock()
	o.ids = append(o.ids, gateway.RequestID(ctx))
	o.mu.Unlock()
	return o.Origin.Stat(ctx, bucket, key)
}

func TestEngineWorksUnderTheRequestsID(t *testing.T) {
	base, root := openFS(t)
	o := &idOrigin{Origin: base}
	e := newEnvOver(t, gateway.Options{Origin: o}, root, nil)
	bucket := e.makeBucket(t, "reqid")
	o.mu.Lock()
	o.ids = nil
	o.mu.Unlock()
	resp, _ := e.do(t, rawRequest{method: http.MethodHead, path: "/" + bucket + "/missing"})
	id := resp.Header.Get("X-Amz-Request-Id")
	o.mu.Lock()
	defer o.mu.Unlock()
	if id == "" || len(o.ids) == 0 {
		t.Fatalf("request id %q, origin stats %v", id, o.ids)
	}
	for _, got := range o.ids {
		if got != id {
			t.Fatalf("the origin was asked under request %q, the client was told %q", got, id)
		}
	}
}
