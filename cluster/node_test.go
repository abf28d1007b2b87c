// The Node's settling of write-back copies: copies of a dead primary are
// taken over, and old copies of a live primary that no longer holds the
// write (restarted with an empty disk before anyone saw it dead) are
// uploaded too, while those it still holds stay.
package cluster

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/copies"
	"github.com/granary-dev/granary/store/origin/fs"
)

// fixedMembers is a Membership that never changes.
type fixedMembers []Member

func (f fixedMembers) Members() []Member        { return f }
func (f fixedMembers) Changes() <-chan struct{} { return nil }
func (f fixedMembers) Close() error             { return nil }

// pendingCaller answers Pending from a set; other calls are not made.
type pendingCaller struct {
	mu      sync.Mutex
	pending map[string]bool // "bucket/key" its primary still holds
	asked   int
}

func (c *pendingCaller) Ping(context.Context, Member) error { return nil }
func (c *pendingCaller) PutReplica(context.Context, Member, store.ObjectInfo, io.Reader) error {
	return errors.New("not used")
}
func (c *pendingCaller) DropReplica(context.Context, Member, string, string, string) error {
	return errors.New("not used")
}
func (c *pendingCaller) Pending(_ context.Context, _ Member, bucket, key string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked++
	return c.pending[bucket+"/"+key], nil
}

func TestNodeReconcilesCopiesOfALivePrimary(t *testing.T) {
	ctx := context.Background()
	o, err := fs.New(fs.Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	if err := o.MakeBucket(ctx, "bkt"); err != nil {
		t.Fatal(err)
	}
	cs, err := copies.Open(t.TempDir(), o, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	put := func(primary, key string, data []byte, at time.Time) {
		sum := md5.Sum(data)
		info := store.ObjectInfo{Bucket: "bkt", Key: key, Size: int64(len(data)), ETag: hex.EncodeToString(sum[:]), LastModified: at}
		if err := cs.Put(ctx, primary, info, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * reconcileAfter)
	put("live", "forgotten", []byte("the primary lost this"), old)
	put("live", "held", []byte("the primary still uploads this"), old)
	put("dead", "orphan", []byte("its primary died"), time.Now())
	caller := &pendingCaller{pending: map[string]bool{"bkt/held": true}}
	self := Member{ID: "self", Addr: "self:1"}
	n, err := NewNode(NodeOptions{Self: self, Membership: fixedMembers{{ID: "live", Addr: "live:1"}, self},
		Client: caller, Copies: cs, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	n.takeOver()
	for key, want := range map[string]string{"forgotten": "the primary lost this", "orphan": "its primary died"} {
		rc, _, err := o.Get(ctx, "bkt", key, store.ReadRange{Length: -1})
		if err != nil {
			t.Fatalf("%s is not at the origin: %v", key, err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if string(got) != want {
			t.Fatalf("%s at the origin: %q", key, got)
		}
	}
	if _, err := o.Stat(ctx, "bkt", "held"); !errors.Is(err, store.ErrNoSuchKey) {
		t.Fatalf("a copy its live primary still holds reached the origin: %v", err)
	}
	if got := cs.Primaries(); len(got) != 1 || got["live"] != 1 {
		t.Fatalf("copies left: %v, want the held one only", got)
	}
	// Within reconcileEvery, live primaries are not asked again.
	asked := caller.asked
	n.takeOver()
	if caller.asked != asked {
		t.Fatalf("asked %d more times within reconcileEvery", caller.asked-asked)
	}
}

// Two nodes joined one after the other: for a key that moved a -> c -> d,
// d's heirs name c (its owner without d) and then a (its owner without d
// and c, where it was before c joined), so the hand-off finds it where it
// was cached, though d saw none of it happen. An hour after the view last
// changed, only the first heir is named.
func TestNodeHeirsLookBackAcrossChanges(t *testing.T) {
	ms := fixedMembers{{ID: "a", Addr: "a:1"}, {ID: "b", Addr: "b:1"}, {ID: "c", Addr: "c:1"}, {ID: "d", Addr: "d:1"}}
	n, err := NewNode(NodeOptions{Self: ms[3], Membership: ms, Client: &pendingCaller{}, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	ringAB, _ := NewRing([]string{"a", "b"})
	ringABC, _ := NewRing([]string{"a", "b", "c"})
	var key []byte
	for i := 0; key == nil && i < 100000; i++ {
		k := []byte{byte(i), byte(i >> 8), byte(i >> 16)}
		if ringAB.Owners(k, 1)[0] == "a" && ringABC.Owners(k, 1)[0] == "c" && n.Owners(k, 1)[0].ID == "d" {
			key = k
		}
	}
	if key == nil {
		t.Fatal("no key moved a -> c -> d in 100000 tries")
	}
	got := n.Heirs(key)
	if len(got) < 2 || got[0].ID != "c" || got[1].ID != "a" {
		t.Fatalf("heirs %v, want c (the owner without d) then a (the owner without d and c)", got)
	}
	n.cur.Load().since = time.Now().Add(-handOffFor - time.Minute)
	if got := n.Heirs(key); len(got) != 1 || got[0].ID != "c" {
		t.Fatalf("heirs long after the last change: %v, want c alone", got)
	}
}
