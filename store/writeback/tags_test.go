// Tagging an object still in the log: it waits (boundedly) for the object
// to reach the origin, then tags it there.
package writeback

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/granary-dev/granary/store"
)

// taggingGate is a gate over an origin that keeps tags.
type taggingGate struct {
	*gate
	store.Tagger
}

func TestTagsWaitForTheOrigin(t *testing.T) {
	raw := s3Origin(t)
	g := newGate(raw, false)
	l := openLog(t, Options{Origin: taggingGate{g, raw}, WriteBack: always})
	b := newBucket(t, l)
	put(t, l, b, "k", []byte("staged"))
	old := tagFlushWait
	tagFlushWait = 300 * time.Millisecond
	t.Cleanup(func() { tagFlushWait = old })

	tags := map[string]string{"stage": "done"}
	if err := l.SetObjectTags(testCtx(t), b, "k", tags); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("tagging an object the origin does not have yet: %v, want ErrUnavailable", err)
	}
	got, err := l.ObjectTags(testCtx(t), b, "k")
	if err != nil || len(got) != 0 {
		t.Fatalf("tags of the staged object: %v, %v", got, err)
	}
	g.Open()
	tagFlushWait = old
	if err := l.SetObjectTags(testCtx(t), b, "k", tags); err != nil {
		t.Fatal(err)
	}
	if got, err := raw.ObjectTags(testCtx(t), b, "k"); err != nil || !maps.Equal(got, tags) {
		t.Fatalf("tags at the origin: %v, %v", got, err)
	}
}
