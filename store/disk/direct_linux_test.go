//go:build linux

// Chunk files past the page cache: the bytes arrive whole, the page cache
// holds none of the blocks written directly, and once a filesystem
// refused O_DIRECT chunks still arrive, through the page cache.
package disk

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// supportsDirect reports whether dir's filesystem takes O_DIRECT.
func supportsDirect(t *testing.T, dir string) bool {
	f, err := os.OpenFile(filepath.Join(dir, "probe"), os.O_WRONLY|os.O_CREATE|syscall.O_DIRECT, 0o600)
	if errors.Is(err, syscall.EINVAL) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	return os.Remove(filepath.Join(dir, "probe")) == nil
}

// residentPages counts the pages of path's first n bytes in the page
// cache.
func residentPages(t *testing.T, path string, n int) int {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, n, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (n+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(n), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	in := 0
	for _, v := range vec {
		in += int(v & 1)
	}
	return in
}

// onlyChunkFile returns the path of the tier's one chunk file.
func onlyChunkFile(t *testing.T, tier *Tier) string {
	files, err := filepath.Glob(filepath.Join(tier.chunkDir, "*"))
	if err != nil || len(files) != 1 {
		t.Fatalf("chunk files: %v, %v; want one", files, err)
	}
	return files[0]
}

// directDir returns an empty directory whose filesystem takes O_DIRECT:
// the test's temp dir, else one beside the package (the repository's
// disk, when the temp dir is a tmpfs that refuses it).
func directDir(t *testing.T) string {
	dir := t.TempDir()
	if supportsDirect(t, dir) {
		return dir
	}
	dir, err := os.MkdirTemp(".", "direct-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if !supportsDirect(t, dir) {
		t.Skipf("neither the temp dir nor %s takes O_DIRECT (TestChunkFilesOnceRefused covers that)", dir)
	}
	return dir
}

func TestChunkFilesBypassPageCache(t *testing.T) {
	dir := directDir(t)
	tier := openT(t, Options{Dir: dir, Capacity: 64 << 20, Policy: PolicyLRU})
	const size = 2<<20 + 123 // whole blocks, then a tail shorter than one
	id, data := chunk("big", 0, size)
	if !aligned(data) {
		t.Fatal("the test's chunk buffer is not block-aligned")
	}
	mustPut(t, tier, id, data)
	if tier.direct.refused.Load() {
		t.Fatal("the tier stopped writing directly on a filesystem that takes O_DIRECT")
	}
	whole := size &^ (directAlign - 1)
	if n := residentPages(t, onlyChunkFile(t, tier), whole); n != 0 {
		t.Errorf("%d pages of the directly written blocks are in the page cache, want 0", n)
	}
	mustGet(t, tier, id, data)

	// A buffer that is not block-aligned goes through the page cache.
	id2, data2 := chunk("odd", 0, size+1)
	mustPut(t, tier, id2, data2[1:])
	mustGet(t, tier, id2, data2[1:])
}

// TestChunkFilesOnceRefused: after a filesystem refused O_DIRECT (tmpfs
// before Linux 6.6, some FUSE and network filesystems), chunk files go
// through the page cache, whole.
func TestChunkFilesOnceRefused(t *testing.T) {
	tier := openT(t, Options{Dir: t.TempDir(), Capacity: 64 << 20, Policy: PolicyLRU})
	tier.direct.refused.Store(true)
	id, data := chunk("big", 0, 2<<20+123)
	mustPut(t, tier, id, data)
	mustGet(t, tier, id, data)
	if n := residentPages(t, onlyChunkFile(t, tier), len(data)); n == 0 {
		t.Error("a chunk written through the page cache has no page there")
	}
}
