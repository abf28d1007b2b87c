// Tests of the mount's chunk placement helpers: how long a silent owner
// is skipped (which addresses it may connect to: internal/ring's
// TestRoutable).
package fuse

import (
	"errors"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

func TestOwnerBackoffDoublesAndResets(t *testing.T) {
	w := newOwners(nil, &Options{}, "http")
	var got []time.Duration
	for range 7 {
		w.failed("n2", errors.New("refused"))
		got = append(got, w.backoff["n2"])
	}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 5 * time.Minute, 5 * time.Minute}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("skips after each failure: %v, want %v", got, want)
		}
	}
	if !time.Now().Before(w.downTill["n2"]) {
		t.Fatal("a failed owner is not skipped")
	}
	w.answered("n2")
	w.failed("n2", errors.New("refused"))
	if w.backoff["n2"] != ownerBackoff {
		t.Fatalf("after an answer the skip is %v, want %v again", w.backoff["n2"], ownerBackoff)
	}
}

// TestOwnerSkippedOnlyWhenSilent: an owner that answered, even with a
// 5xx, is asked again; one that did not answer is skipped.
func TestOwnerSkippedOnlyWhenSilent(t *testing.T) {
	busy := s3Error("get", "k", minio.ErrorResponse{StatusCode: 503, Code: "SlowDown"})
	refused := s3Error("get", "k", errors.New("dial tcp: connection refused"))
	for _, c := range []struct {
		err  error
		skip bool
	}{{busy, false}, {refused, true}} {
		if !errors.Is(c.err, errUnavailable) || silent(c.err) != c.skip {
			t.Errorf("%v: unavailable %v, silent %v; want skipped %v", c.err, errors.Is(c.err, errUnavailable), silent(c.err), c.skip)
		}
	}
}
