// A disk hit of one chunk, asked by a caller that sends files, comes
// lent unread from the disk tier's segment when RAM would not keep it,
// and is read and put in RAM as before when RAM would.
package gateway

import (
	"context"
	"io"
	"syscall"
	"testing"

	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/internal/poll"
	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/disk"
	"github.com/granary-dev/granary/store/ram"
)

func TestDiskHitLentUnread(t *testing.T) {
	r := newRig(t, rigOptions{})
	data := randBytes(t, 100<<10)
	info := r.seed("sample", data)
	d, err := disk.Open(disk.Options{Dir: t.TempDir(), Capacity: 64 << 20, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	engine := func(front store.Tier) *Engine {
		e, err := New(Options{Origin: r.origin, Freshness: Freshness{Mode: Immutable}, Logger: zerolog.Nop(),
			RAM: front, Disk: d})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	get := func(e *Engine, rng *Range) *Object {
		obj, err := e.Get(context.Background(), r.bucket, "sample", GetOptions{Range: rng, FileFrom: 64 << 10})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { obj.Close() })
		return obj
	}
	mem := ram.New(ram.Options{Capacity: 64 << 20})
	withRAM := engine(mem)
	io.Copy(io.Discard, get(withRAM, nil)) //nolint:errcheck // the miss fills both tiers
	poll.Until(t, "the sample on the disk tier", func() bool { return d.Held(r.bucket, "sample", info.ETag) == int64(len(data)) })
	if err := mem.DeleteObject(r.bucket, "sample"); err != nil {
		t.Fatal(err)
	}
	if obj := get(withRAM, nil); !readsAs(t, obj, data) || isFile(obj) {
		t.Fatal("a disk hit RAM keeps: lent unread, or not the sample's bytes")
	}
	if mem.Held(r.bucket, "sample", info.ETag) != int64(len(data)) {
		t.Fatal("a disk hit RAM keeps is not in RAM after it")
	}

	noRAM := engine(nil)
	obj := get(noRAM, nil)
	fd, off, ok := obj.FileOnly()
	if !ok {
		t.Fatal("a disk hit with no RAM tier: not lent from its file")
	}
	got := make([]byte, len(data))
	if n, err := syscall.Pread(int(fd), got, off); err != nil || n != len(data) || string(got) != string(data) {
		t.Fatalf("the file where the body lies: %d bytes, %v; not the sample", n, err)
	}
	if !readsAs(t, obj, data) {
		t.Fatal("the lent body reads other bytes than the sample's")
	}
	part := get(noRAM, &Range{Start: 1000, End: 80_999})
	if !isFile(part) || !readsAs(t, part, data[1000:81_000]) {
		t.Fatal("a range of a disk hit: not lent, or not the sample's bytes")
	}
	if small := get(noRAM, &Range{Start: 0, End: 999}); isFile(small) || !readsAs(t, small, data[:1000]) {
		t.Fatal("a range under FileFrom: lent unread, or not the sample's bytes")
	}
}

func isFile(obj *Object) bool {
	_, _, ok := obj.FileOnly()
	return ok
}

// readsAs reads obj whole and reports whether it holds want.
func readsAs(t *testing.T, obj *Object, want []byte) bool {
	t.Helper()
	got, err := io.ReadAll(obj)
	if err != nil {
		t.Fatal(err)
	}
	return string(got) == string(want)
}
