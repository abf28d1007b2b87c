// Reads through a real mount: whole files, random ranges, parallel
// readers, a file rewritten at the origin, and the memory budget.
package fuse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/granary-dev/granary/internal/pagecache"
)

func TestReadWholeFiles(t *testing.T) {
	mc, bucket := newBucket(t)
	sizes := []int{0, 1, 100 << 10, 20 << 20}
	objs := map[string][]byte{}
	for i, n := range sizes {
		objs[fmt.Sprintf("d/f%d", n)] = content(uint64(i), n)
	}
	putMany(t, mc, bucket, objs)
	dir, s := mountT(t, baseOptions(bucket))
	keepPageCache(t)
	bounded(t, 30*time.Second, "reads", func() {
		for key, want := range objs {
			got, err := os.ReadFile(filepath.Join(dir, key))
			if err != nil {
				t.Errorf("read %s: %v", key, err)
				continue
			}
			if sum(got) != sum(want) {
				t.Errorf("%s: %d bytes with sha256 %x, want %d bytes with %x", key, len(got), sum(got), len(want), sum(want))
			}
		}
	})
	// A sequential read fetches the file about once: read-ahead does
	// not fetch the same bytes twice.
	if f, big := s.fsys.cl.fetched.Load(), int64(20<<20+100<<10+1); f < big || f > big+big/10 {
		t.Errorf("fetched %d bytes to read %d", f, big)
	}
	// The ETag is unchanged: a new open keeps the kernel's page cache.
	s.fsys.cl.fetched.Store(0)
	bounded(t, 10*time.Second, "cached read", func() {
		if got, err := os.ReadFile(filepath.Join(dir, "d/f20971520")); err != nil || sum(got) != sum(objs["d/f20971520"]) {
			t.Errorf("second read: %v", err)
		}
	})
	keptPageCache(t, s.fsys.cl.fetched.Load(), 20<<20)
}

// keepPageCache holds off drops of the kernel's caches by other test
// binaries (pagecache.Keep) until t ends: a test that checks a second
// read came from the page cache calls it before the first read.
func keepPageCache(t *testing.T) {
	t.Helper()
	release, err := pagecache.Keep()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
}

// keptPageCache checks that reading size bytes of unchanged files again
// did not fetch them again: the kernel may reclaim some cached pages
// under memory pressure (in a CI run beside the other packages' tests,
// 15% of them), but a dropped cache, or pages invalidated at open,
// would refetch them all (keepPageCache keeps the tests' own drops
// away).
func keptPageCache(t *testing.T, fetched, size int64) {
	t.Helper()
	if fetched > size/2 {
		t.Errorf("second read of %d bytes of unchanged files fetched %d: the page cache was dropped", size, fetched)
	}
}

func TestRandomReads(t *testing.T) {
	mc, bucket := newBucket(t)
	const size = 24 << 20
	model := content(42, size)
	put(t, mc, bucket, "big", model)
	dir, s := mountT(t, baseOptions(bucket))
	randomReads(t, filepath.Join(dir, "big"), model, 1, 300, 1<<20)
	// Far-apart small reads of a fresh file: no read-ahead beyond what
	// the kernel asks for.
	_ = s.fsys.cl.fetched.Swap(0)
	bounded(t, 30*time.Second, "sparse reads", func() {
		put(t, mc, bucket, "sparse", model)
		f, err := os.Open(filepath.Join(dir, "sparse"))
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		buf := make([]byte, 4096)
		const reads = 10
		for i := 0; i < reads; i++ {
			off := int64(i) * (size / reads)
			if _, err := f.ReadAt(buf, off); err != nil || !bytes.Equal(buf, model[off:off+4096]) {
				t.Errorf("ReadAt(%d): %v", off, err)
			}
		}
		if f := s.fsys.cl.fetched.Load(); f > reads*256<<10 {
			t.Errorf("random reader fetched %d bytes for %d reads of 4 KiB", f, reads)
		}
	})
}

func TestParallelReaders(t *testing.T) {
	mc, bucket := newBucket(t)
	objs := map[string][]byte{"shared": content(100, 8<<20)}
	for i := 0; i < 8; i++ {
		objs[fmt.Sprintf("own/%d", i)] = content(uint64(200+i), 3<<20+i*1000)
	}
	putMany(t, mc, bucket, objs)
	dir, _ := mountT(t, baseOptions(bucket))
	bounded(t, 40*time.Second, "16 readers", func() {
		var g errgroup.Group
		for i := 0; i < 16; i++ {
			key := "shared"
			if i%2 == 1 {
				key = fmt.Sprintf("own/%d", i/2)
			}
			g.Go(func() error {
				got, err := os.ReadFile(filepath.Join(dir, key))
				if err != nil {
					return err
				}
				if sum(got) != sum(objs[key]) {
					return fmt.Errorf("%s: wrong content", key)
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			t.Error(err)
		}
	})
}

// rewriteTTL is the metadata TTL of the rewrite tests.
const rewriteTTL = 300 * time.Millisecond

// rewritten mounts (with readOnly) a bucket holding v1 as "f", opens it
// and reads its first 64 KiB, rewrites it as v2 at the origin, then runs
// check with the descriptor opened before the rewrite (bounded).
func rewritten(t *testing.T, readOnly bool, check func(path string, held *os.File, v1, v2 []byte)) {
	mc, bucket := newBucket(t)
	v1, v2 := content(1, 16<<20), content(2, 9<<20)
	put(t, mc, bucket, "f", v1)
	opts := baseOptions(bucket)
	opts.ReadOnly, opts.MetadataTTL = readOnly, rewriteTTL
	dir, _ := mountT(t, opts)
	path := filepath.Join(dir, "f")
	bounded(t, 30*time.Second, "rewrite", func() {
		held, err := os.Open(path)
		if err != nil {
			t.Error(err)
			return
		}
		defer held.Close()
		head := make([]byte, 64<<10)
		if _, err := held.ReadAt(head, 0); err != nil || !bytes.Equal(head, v1[:len(head)]) {
			t.Errorf("first read: %v", err)
			return
		}
		put(t, mc, bucket, "f", v2)
		check(path, held, v1, v2)
	})
}

func TestRewrittenAtOrigin(t *testing.T) {
	rewritten(t, false, func(path string, held *os.File, v1, v2 []byte) {
		// The held handle pinned v1: its reads return v1's bytes
		// (from caches) or fail, never v2's.
		buf := make([]byte, 1<<20)
		var readErr error
		for off := int64(12 << 20); off < int64(len(v1)) && readErr == nil; off += int64(len(buf)) {
			n, err := held.ReadAt(buf, off)
			if !bytes.Equal(buf[:n], v1[off:off+int64(n)]) {
				t.Errorf("held handle at %d: bytes of another version", off)
				return
			}
			readErr = err
		}
		if !errors.Is(readErr, syscall.EIO) {
			t.Errorf("held handle after rewrite: %v, want EIO", readErr)
		}
		// New opens see v2 once the TTL has passed, whole (a
		// first open may still see v1 in full).
		deadline := time.Now().Add(5 * time.Second)
		for {
			got, err := os.ReadFile(path)
			if err == nil && sum(got) == sum(v2) {
				return
			}
			if err == nil && sum(got) != sum(v1) {
				t.Errorf("read %d bytes, neither version", len(got))
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("still not v2 after 5s: %v", err)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

func TestMemoryBudget(t *testing.T) {
	mc, bucket := newBucket(t)
	const files, size = 8, 64 << 20
	data := content(9, size)
	var wg sync.WaitGroup
	for i := 0; i < files; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); put(t, mc, bucket, fmt.Sprintf("f%d", i), data) }()
	}
	wg.Wait()
	opts := baseOptions(bucket)
	opts.MaxMemory = 16 << 20
	dir, s := mountT(t, opts)
	b := s.fsys.budget
	stop := make(chan struct{})
	var peak int64
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				peak = max(peak, b.inUse())
			}
		}
	}()
	start := time.Now()
	bounded(t, 3*time.Minute, "8 sequential readers", func() {
		var g errgroup.Group
		for i := 0; i < files; i++ {
			g.Go(func() error {
				f, err := os.Open(filepath.Join(dir, fmt.Sprintf("f%d", i)))
				if err != nil {
					return err
				}
				defer f.Close()
				got, err := io.ReadAll(f)
				if err != nil {
					return err
				}
				if sum(got) != sum(data) {
					return fmt.Errorf("f%d: wrong content", i)
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			t.Error(err)
		}
	})
	close(stop)
	sampler.Wait()
	t.Logf("8 x 64 MiB through a 16 MiB budget in %v, peak %d MiB, %d chunks skipped",
		time.Since(start), peak>>20, b.skipped.Load())
	if peak > opts.MaxMemory {
		t.Errorf("peak budget use %d > %d", peak, opts.MaxMemory)
	}
	if peak == 0 {
		t.Errorf("no read-ahead used the budget")
	}
	// close(2) does not wait for the FUSE release: poll, bounded.
	deadline := time.Now().Add(5 * time.Second)
	for b.inUse() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := b.inUse(); n != 0 {
		t.Errorf("%d bytes still charged after every file was closed", n)
	}
}

// randomReads reads n random ranges of up to maxLen bytes of the file at
// path through one descriptor, each checked against model (bounded).
func randomReads(t *testing.T, path string, model []byte, seed uint64, n, maxLen int) {
	t.Helper()
	bounded(t, 30*time.Second, "random reads", func() {
		f, err := os.Open(path)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		r := rand.New(rand.NewPCG(seed, seed+1))
		for range n {
			off, size := r.Int64N(int64(len(model))), 1+r.IntN(maxLen)
			buf := make([]byte, size)
			got, err := f.ReadAt(buf, off)
			want := model[off:min(off+int64(size), int64(len(model)))]
			if err != nil && !(errors.Is(err, io.EOF) && got == len(want)) {
				t.Errorf("ReadAt(%d, %d): %d, %v", off, size, got, err)
				return
			}
			if !bytes.Equal(buf[:got], want) {
				t.Errorf("ReadAt(%d, %d): wrong bytes", off, size)
				return
			}
		}
	})
}
