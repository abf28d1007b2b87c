// Forgets a member missed, through the fake cluster: a member that was
// not live (dead to the writer) or did not answer when a key changed is
// told once it answers again, and stops serving the old version (the
// cluster's freshness is immutable: without the forget it would serve it
// for good); one that missed more than maxOwed keys forgets everything.
package gateway

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/granary-dev/granary/store"
)

// put writes data as key through engine i.
func (c *fakeCluster) put(i int, key string, data []byte) {
	c.t.Helper()
	if _, err := c.engines[i].Put(context.Background(), c.bucket, key, bytes.NewReader(data), int64(len(data)), store.ObjectMeta{}); err != nil {
		c.t.Fatal(err)
	}
	settle(c.t, c.engines[i])
}

// wantRead checks that key reads as want through engine i.
func (c *fakeCluster) wantRead(i int, key string, want []byte, what string) {
	c.t.Helper()
	got, err := c.read(i, key)
	if err != nil || !bytes.Equal(got, want) {
		c.t.Fatalf("%s: %s through node %d: %d bytes (want %d), %v", what, key, i, len(got), len(want), err)
	}
}

func TestClusterMissedForgetsAreToldOnReturn(t *testing.T) {
	for _, fault := range []string{"down", "mute"} {
		t.Run(fault, func(t *testing.T) {
			c := newFakeCluster(t, fakeClusterOptions{n: 3, owners: 1, chunk: 64 << 10, modes: map[string]WriteMode{"rig": WriteThrough}})
			old, updated := randBytes(t, 100<<10), randBytes(t, 90<<10)
			c.put(0, "k", old)
			c.wantRead(2, "k", old, "before")
			c.mu.Lock()
			if fault == "down" {
				c.down["n2"] = true // gone from the writer's view: it is owed
			} else {
				c.mute["n2"] = true // listed, but the forget fails
			}
			c.mu.Unlock()
			c.put(0, "k", updated)
			c.mu.Lock()
			c.down["n2"], c.mute["n2"] = false, false
			c.mu.Unlock()
			c.wantRead(1, "k", updated, "a member told at the time")
			c.engines[0].deliverOwedOnce(context.Background())
			c.wantRead(2, "k", updated, "the member that missed the write, once told")
			if owed := c.engines[0].peer.owed.owedTo(); len(owed) != 0 {
				t.Fatalf("still owed to %v after delivery", owed)
			}
		})
	}
}

func TestClusterMissingTooMuchForgetsEverything(t *testing.T) {
	old := maxOwed
	maxOwed = 2
	t.Cleanup(func() { maxOwed = old })
	c := newFakeCluster(t, fakeClusterOptions{n: 3, owners: 1, chunk: 64 << 10, modes: map[string]WriteMode{"rig": WriteThrough}})
	before := make([][]byte, 4)
	for i := range before {
		before[i] = randBytes(t, 10<<10)
		c.put(0, fmt.Sprintf("k%d", i), before[i])
		c.wantRead(2, fmt.Sprintf("k%d", i), before[i], "before")
	}
	c.mu.Lock()
	c.down["n2"] = true
	c.mu.Unlock()
	after := make([][]byte, 3) // k0..k2 change, more than maxOwed
	for i := range after {
		after[i] = randBytes(t, 12<<10)
		c.put(0, fmt.Sprintf("k%d", i), after[i])
	}
	c.mu.Lock()
	c.down["n2"] = false
	c.mu.Unlock()
	c.engines[0].deliverOwedOnce(context.Background())
	if n := c.count(0, 2, "forget-all"); n != 1 {
		t.Fatalf("node 2 was told to forget everything %d times, want 1", n)
	}
	if _, ok := c.engines[2].meta.get(metaKey(c.bucket, "k3")); ok {
		t.Fatal("node 2 still caches the metadata of an unchanged key after forgetting everything")
	}
	for i := range after {
		c.wantRead(2, fmt.Sprintf("k%d", i), after[i], "after forgetting everything")
	}
	c.wantRead(2, "k3", before[3], "an unchanged key")
}

// A member's forget that teaches a version (written through it) while
// reads use the metadata cache: under -race this caught the cache being
// written without its lock.
func TestClusterForgetWithVersionBesideReads(t *testing.T) {
	c := newFakeCluster(t, fakeClusterOptions{n: 2, owners: 1, chunk: 64 << 10})
	data := randBytes(t, 10<<10)
	c.put(0, "k", data)
	info, err := c.engines[1].Head(context.Background(), c.bucket, "k")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 2000 {
			c.engines[1].PeerBackend().Forget(c.bucket, "k", &info, "n0")
			c.engines[1].PeerBackend().Forget(c.bucket, "j", &info, "n0")
		}
	}()
	for range 2000 {
		if _, err := c.engines[1].Head(context.Background(), c.bucket, "k"); err != nil {
			t.Fatal(err)
		}
	}
	<-done
}

// Two writers' forgets of one key arriving out of order: the member keeps
// the newer version (by the writers' clocks) whichever came last.
func TestClusterForgetsOutOfOrderKeepTheNewer(t *testing.T) {
	c := newFakeCluster(t, fakeClusterOptions{n: 2, owners: 1, chunk: 64 << 10})
	at := time.Now()
	older := store.ObjectInfo{Bucket: c.bucket, Key: "k", ETag: "older", Size: 1, LastModified: at}
	newer := store.ObjectInfo{Bucket: c.bucket, Key: "k", ETag: "newer", Size: 2, LastModified: at.Add(time.Millisecond)}
	b := c.engines[1].PeerBackend()
	b.Forget(c.bucket, "k", &newer, "n0")
	b.Forget(c.bucket, "k", &older, "n0")
	got, ok := c.engines[1].meta.get(metaKey(c.bucket, "k"))
	if !ok || got.info.ETag != "newer" {
		t.Fatalf("after the older write's word arrived last, node 1 knows %+v (%v), want the newer version", got.info, ok)
	}
	// A newer word still replaces what is known.
	newest := newer
	newest.ETag, newest.LastModified = "newest", at.Add(time.Second)
	b.Forget(c.bucket, "k", &newest, "n0")
	if got, _ := c.engines[1].meta.get(metaKey(c.bucket, "k")); got.info.ETag != "newest" {
		t.Fatalf("node 1 knows %q, want newest", got.info.ETag)
	}
}
