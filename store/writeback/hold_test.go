// Uploads give way to restores: an upload's body waits while clients read
// staged copies, resumes when they stop, and is never held past its
// window, so reads that never stop slow uploads but never starve them.
package writeback

import (
	"io"
	"sync"
	"testing"
	"time"

	"github.com/granary-dev/granary/store"
)

// holdLog opens a write-back log over a shut gate with the given hold
// parameters, started, closed when the test ends.
func holdLog(t *testing.T, g *gate, linger, holdFor, runFor time.Duration) *Log {
	t.Helper()
	l, err := Open(Options{Origin: g, Dir: t.TempDir(), WriteBack: always,
		RetryMin: 10 * time.Millisecond, RetryMax: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	l.restores.linger, l.restores.holdFor, l.restores.runFor = linger, holdFor, runFor
	l.Start()
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return l
}

// restore reads bucket/key's staged copy whole, as a client does; false
// once there is none (it landed).
func restore(t *testing.T, l *Log, bucket string, info store.ObjectInfo) bool {
	t.Helper()
	rc, err := l.GetStaged(bucket, info.Key, store.ReadRange{Length: info.Size, ETag: info.ETag})
	if err != nil {
		return false
	}
	defer rc.Close()
	if n, err := io.Copy(io.Discard, rc); err != nil || n != info.Size {
		t.Errorf("read of the staged %s: %d bytes, %v", info.Key, n, err)
	}
	return true
}

// restoring reads the staged copy over and over until stop is closed or
// it landed; it returns once the first read is done (so an upload that
// starts after it finds the restore going on), with a func that stops it
// and waits.
func restoring(t *testing.T, l *Log, bucket string, info store.ObjectInfo) func() {
	stop, done, first := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			ok := restore(t, l, bucket, info)
			if n == 0 {
				close(first)
			}
			if !ok {
				return
			}
		}
	}()
	<-first
	var once sync.Once
	return func() {
		once.Do(func() { close(stop) })
		<-done
	}
}

// awaitHeld waits until an upload body waits for the restore.
func awaitHeld(t *testing.T, l *Log) {
	t.Helper()
	deadline := time.Now().Add(opTimeout)
	for l.restores.waiting.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no upload held for the restore")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestUploadWaitsForRestore(t *testing.T) {
	raw := s3Origin(t)
	b := newBucket(t, raw)
	g := newGate(raw, false)
	// One read counts as a restore going on for an hour, and a hold may
	// last as long: the upload stays held until the log closes.
	l := holdLog(t, g, time.Hour, time.Hour, time.Hour)
	info := put(t, l, b, "k", payload(100<<10, 1))
	if !restore(t, l, b, info) {
		t.Fatal("no staged copy to read")
	}
	g.Open()
	awaitHeld(t, l)
	if ev := g.Events(); len(ev) != 0 {
		t.Fatalf("the origin got %v while its body was held", ev)
	}
	if st := l.Stats(); st.DirtyObjects != 1 {
		t.Fatalf("dirty objects while held = %d, want 1", st.DirtyObjects)
	}
	// Close cancels the held upload at once; it stays journaled.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l.restores.waiting.Load() != 0 {
		t.Fatal("an upload still waits after Close")
	}
}

func TestUploadResumesWhenRestoreStops(t *testing.T) {
	raw := s3Origin(t)
	b := newBucket(t, raw)
	g := newGate(raw, false)
	// The hold window is an hour: only the reads' pause lets it go.
	l := holdLog(t, g, 200*time.Millisecond, time.Hour, time.Hour)
	data := payload(100<<10, 2)
	info := put(t, l, b, "k", data)
	stop := restoring(t, l, b, info)
	defer stop()
	g.Open()
	awaitHeld(t, l)
	stop()
	flush(t, l, b)
	wantData(t, raw, b, "k", data)
}

func TestUploadNotStarvedByEndlessRestore(t *testing.T) {
	raw := s3Origin(t)
	b := newBucket(t, raw)
	g := newGate(raw, false)
	// Reads count for an hour, so only the hold window's end lets the
	// upload go.
	l := holdLog(t, g, time.Hour, 50*time.Millisecond, 50*time.Millisecond)
	data := payload(3<<20, 3)
	info := put(t, l, b, "k", data)
	stop := restoring(t, l, b, info)
	defer stop()
	g.Open()
	flush(t, l, b)
	wantData(t, raw, b, "k", data)
	if l.restores.held.Load() == 0 {
		t.Fatal("the upload never waited for the restore")
	}
}
