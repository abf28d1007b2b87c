// Read-only mounts, which open files without a round trip: whole and
// random reads, the page cache kept, one version per descriptor when the
// object is rewritten; and lookups answered from refreshed listings.
package fuse

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func roOptions(bucket string) Options {
	o := baseOptions(bucket)
	o.ReadOnly = true
	return o
}

func TestReadOnlyReads(t *testing.T) {
	mc, bucket := newBucket(t)
	objs := map[string][]byte{}
	for i, n := range []int{0, 1, 100 << 10, 20 << 20} {
		objs[fmt.Sprintf("d/f%d", n)] = content(uint64(i+10), n)
	}
	putMany(t, mc, bucket, objs)
	dir, s := mountT(t, roOptions(bucket))
	keepPageCache(t)
	readAll := func(what string) {
		bounded(t, 30*time.Second, what, func() {
			for key, want := range objs {
				got, err := os.ReadFile(filepath.Join(dir, key))
				if err != nil || sum(got) != sum(want) {
					t.Errorf("%s: %s: %d bytes, %v; want %d bytes", what, key, len(got), err, len(want))
				}
			}
		})
	}
	readAll("first read")
	if f, total := s.fsys.cl.fetched.Load(), int64(20<<20+100<<10+1); f < total || f > total+total/10 {
		t.Errorf("fetched %d bytes to read %d", f, total)
	}
	s.fsys.cl.fetched.Store(0)
	readAll("second read")
	keptPageCache(t, s.fsys.cl.fetched.Load(), 20<<20+100<<10+1)
	// Random ranges of a file not read yet, through one descriptor.
	big := content(77, 12<<20)
	put(t, mc, bucket, "big", big)
	randomReads(t, filepath.Join(dir, "big"), big, 3, 100, 512<<10)
}

// TestReadOnlyRewritten: a descriptor keeps the version it opened (or
// gets EIO), new opens get the new version whole, and fstat and stat
// agree with what each one reads.
func TestReadOnlyRewritten(t *testing.T) {
	rewritten(t, true, func(path string, held *os.File, v1, v2 []byte) {
		time.Sleep(2 * rewriteTTL)
		// New opens see v2, whole.
		if got, err := os.ReadFile(path); err != nil || sum(got) != sum(v2) {
			t.Errorf("new open after the TTL: %d bytes, %v; want v2", len(got), err)
		}
		if st, err := os.Stat(path); err != nil || st.Size() != int64(len(v2)) {
			t.Errorf("stat after the TTL: %v, %v; want v2's size", st, err)
		}
		// The held descriptor still is v1: its size, and bytes of v1
		// (from the page cache) or EIO, never v2's.
		if st, err := held.Stat(); err != nil || st.Size() != int64(len(v1)) {
			t.Errorf("fstat of the held descriptor: %v, %v; want v1's size", st, err)
		}
		buf := make([]byte, 1<<20)
		n, err := held.ReadAt(buf, 12<<20)
		if !bytes.Equal(buf[:n], v1[12<<20:12<<20+n]) {
			t.Errorf("held descriptor: %d bytes not of v1", n)
		}
		if err != nil && !errors.Is(err, syscall.EIO) {
			t.Errorf("held descriptor after rewrite: %v, want v1's bytes or EIO", err)
		}
		head := make([]byte, 64<<10)
		if got, err := held.ReadAt(head, 0); err != nil || !bytes.Equal(head[:got], v1[:got]) {
			t.Errorf("held descriptor, cached head: %v", err)
		}
	})
}

// TestListingRefreshAhead: lookups in a listed directory keep being
// answered from the listing, refreshed in the background, long past the
// TTL, and the refresh picks up new objects.
func TestListingRefreshAhead(t *testing.T) {
	for _, ro := range []bool{false, true} {
		t.Run(fmt.Sprintf("read-only=%v", ro), func(t *testing.T) {
			mc, bucket := newBucket(t)
			objs := map[string][]byte{}
			for i := 0; i < 300; i++ {
				objs[fmt.Sprintf("d/%04d", i)] = content(uint64(i), 100)
			}
			putMany(t, mc, bucket, objs)
			opts := baseOptions(bucket)
			opts.ReadOnly = ro
			opts.MetadataTTL = 400 * time.Millisecond
			dir, s := mountT(t, opts)
			bounded(t, 30*time.Second, "lookups", func() {
				// A walk from the top, as a data set's index does.
				if _, err := os.ReadDir(dir); err != nil {
					t.Error(err)
					return
				}
				ents, err := os.ReadDir(filepath.Join(dir, "d"))
				if err != nil || len(ents) != len(objs) {
					t.Errorf("readdir: %d entries, %v", len(ents), err)
					return
				}
				heads := s.fsys.cl.heads.Load()
				put(t, mc, bucket, "d/new", []byte("new"))
				r := rand.New(rand.NewPCG(5, 6))
				seenNew := false
				for end := time.Now().Add(8 * opts.MetadataTTL); time.Now().Before(end); {
					key := fmt.Sprintf("d/%04d", r.IntN(len(objs)))
					if st, err := os.Stat(filepath.Join(dir, key)); err != nil || st.Size() != 100 {
						t.Errorf("stat %s: %v", key, err)
						return
					}
					_, err := os.Stat(filepath.Join(dir, "d/new"))
					seenNew = seenNew || err == nil
					time.Sleep(10 * time.Millisecond)
				}
				if !seenNew {
					t.Errorf("an object put after the listing was not found within %v", 8*opts.MetadataTTL)
				}
				if n := s.fsys.cl.heads.Load() - heads; n > 2 {
					t.Errorf("%d HEAD requests for lookups in a listed directory, want them answered from the listing", n)
				}
			})
		})
	}
}
