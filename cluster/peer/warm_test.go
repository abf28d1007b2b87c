// The warm-up cancel call: signed, answered sealed with the job's status,
// refused with its code (no such job, no id, a node that runs none), and
// never acted on unsigned.
package peer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
)

// fakeWarms are a node's warm-up jobs: id -> state.
type fakeWarms struct {
	mu     sync.Mutex
	states map[string]string
}

type fakeWarm struct {
	ID    string `json:"id"`
	State string `json:"state"`
}

func (w *fakeWarms) cancel(id string) (any, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.states[id]; !ok {
		return nil, fmt.Errorf("%w: %q", ErrNoSuchWarm, id)
	}
	w.states[id] = "cancelled"
	return fakeWarm{ID: id, State: w.states[id]}, nil
}

func (w *fakeWarms) state(id string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.states[id]
}

func TestCancelWarmCall(t *testing.T) {
	warms := &fakeWarms{states: map[string]string{"w1": "running", "w2": "running"}}
	r := startRigWith(t, false, func(o *HandlerOptions) { o.CancelWarm = warms.cancel })
	ctx := context.Background()

	// Unsigned, the call is refused and cancels nothing.
	req, err := http.NewRequest(http.MethodDelete, "http://"+r.to.Addr+RouteWarm+"?id=w2", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp := send(t, req); resp.StatusCode != http.StatusForbidden || warms.state("w2") != "running" {
		t.Fatalf("unsigned: %d, w2 %s", resp.StatusCode, warms.state("w2"))
	}

	var got fakeWarm
	if err := r.client.CancelWarm(ctx, r.to, "w1", &got); err != nil || got != (fakeWarm{ID: "w1", State: "cancelled"}) {
		t.Fatalf("cancel w1: %+v, %v", got, err)
	}
	if warms.state("w1") != "cancelled" || warms.state("w2") != "running" {
		t.Fatalf("after cancelling w1: %v", warms.states)
	}

	var pe *Error
	err = r.client.CancelWarm(ctx, r.to, "w9", &got)
	if !errors.Is(err, ErrNoSuchWarm) || !errors.As(err, &pe) || pe.Code != CodeNoSuchWarm || pe.Status != http.StatusNotFound {
		t.Fatalf("a missing job: %v", err)
	}
	if err := r.client.CancelWarm(ctx, r.to, "", &got); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("no id: %v", err)
	}
	none := startRig(t, false)
	if err := none.client.CancelWarm(ctx, none.to, "w1", &got); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("a node that runs no warm-ups: %v", err)
	}

	// The answer is sealed: a byte changed on the way fails the call.
	ed := &editor{rt: r.client.rt}
	r.client.rt = ed
	ed.set(func(_ *http.Request, _ *http.Response, b []byte) []byte {
		b = bytes.Clone(b)
		b[len(b)/2] ^= 1
		return b
	})
	if err := r.client.CancelWarm(ctx, r.to, "w2", &got); !errors.Is(err, ErrBadAnswer) {
		t.Fatalf("a changed answer: %v, want ErrBadAnswer", err)
	}
}
