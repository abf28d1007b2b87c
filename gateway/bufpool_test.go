// Tests of the flight buffer pool: a buffer comes back only once nothing
// refers to it, and then serves the next flight of its length.
package gateway

import (
	"runtime"
	"testing"
	"time"
	"unsafe"
)

// collectUntil runs the garbage collector until cond holds (finalizers
// run on their own goroutine, after a cycle), or fails after a generous
// deadline.
func collectUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 30 s of collections", what)
		}
		runtime.GC()
		runtime.Gosched()
	}
}

func first(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

func TestBufPoolTakesBackUnreachableBuffers(t *testing.T) {
	p := newBufPool(4 << 20)
	addr := func() uintptr {
		b := p.get(1 << 20)
		b[0] = 1
		return first(b)
	}()
	collectUntil(t, "the dropped buffer back in the pool", func() bool { return p.back.Load() == 1 })
	b := p.get(1 << 20)
	if got := first(b); got != addr || p.reused.Load() != 1 {
		t.Fatalf("get after the buffer came back: %#x (reused %d), want the pooled %#x", got, p.reused.Load(), addr)
	}
	if p.idle() != 0 {
		t.Fatalf("idle %d bytes after handing the only buffer out", p.idle())
	}
	if b2 := p.get(1 << 20); first(b2) == first(b) {
		t.Fatal("the same buffer handed out twice")
	}
}

func TestBufPoolNeverReusesAHeldBuffer(t *testing.T) {
	p := newBufPool(64 << 20)
	held := p.get(1 << 20)
	tail := held[512<<10:] // a slice into the middle keeps it too
	held = nil
	// A dropped buffer of the same length comes back; the held one must not.
	func() { p.get(1 << 20) }()
	collectUntil(t, "the dropped buffer back in the pool", func() bool { return p.back.Load() == 1 })
	for range 3 {
		runtime.GC()
	}
	for range 4 {
		if b := p.get(1 << 20); first(b) == first(tail)-512<<10 {
			t.Fatal("a buffer still referred to was handed out again")
		}
	}
	runtime.KeepAlive(tail)
}

func TestBufPoolBounds(t *testing.T) {
	p := newBufPool(2 << 20)
	if b := p.get(minPooled - 1); p.back.Load() != 0 || len(b) != minPooled-1 {
		t.Fatal("a small buffer is not pooled")
	}
	// Three 1 MiB buffers dropped: two fit.
	func() {
		for range 3 {
			p.get(1 << 20)
		}
	}()
	collectUntil(t, "two of three buffers kept", func() bool { return p.idle() == 2<<20 })
	// A buffer of another length makes room by dropping the old length.
	func() { p.get(2 << 20) }()
	collectUntil(t, "the new length kept", func() bool { return p.count(2<<20) == 1 })
	if p.idle() != 2<<20 || p.count(1<<20) != 0 {
		t.Fatalf("idle %d bytes, %d of the old length, want only the new buffer", p.idle(), p.count(1<<20))
	}
}
