// Tests of the disk tier: the conformance suite, restart, corruption,
// watermarks, unit LRU order, orphan cleanup and options.
package disk

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/index"
	"github.com/granary-dev/granary/store/storetest"
)

func openT(t testing.TB, opts Options) *Tier {
	t.Helper()
	tier, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tier.Close() })
	return tier
}

// TestConformance runs the tier suite under both policies. The suite
// expects every Put to succeed, so under PolicyTinyLFU a declined Put is
// retried with PutAlways (both paths run: the suite fills small tiers).
func TestConformance(t *testing.T) {
	t.Run("lru", func(t *testing.T) {
		storetest.RunTier(t, func(t *testing.T, capacity int64) store.Tier {
			return openT(t, Options{Dir: t.TempDir(), Capacity: capacity, Policy: PolicyLRU})
		})
	})
	t.Run("tinylfu", func(t *testing.T) {
		storetest.RunTier(t, func(t *testing.T, capacity int64) store.Tier {
			return forcePut{openT(t, Options{Dir: t.TempDir(), Capacity: capacity})}
		})
	})
	// As the node opens it: each index insert waits for a pool of
	// writers that, here, is one goroutine.
	t.Run("tinylfu, pooled writers", func(t *testing.T) {
		storetest.RunTier(t, func(t *testing.T, capacity int64) store.Tier {
			return forcePut{openT(t, Options{Dir: t.TempDir(), Capacity: capacity, Writers: 16})}
		})
	})
}

// forcePut is a Tier whose Put falls back to PutAlways when admission
// declines the chunk.
type forcePut struct{ *Tier }

func (f forcePut) Put(id store.ChunkID, data []byte) error {
	err := f.Tier.Put(id, data)
	if errors.Is(err, store.ErrNotAdmitted) {
		err = f.PutAlways(id, data)
	}
	return err
}

// chunk returns the ID and deterministic payload of test chunk i.
func chunk(key string, i, size int) (store.ChunkID, []byte) {
	id := store.ChunkID{Bucket: "b", Key: key, ETag: "e1", Index: int64(i)}
	return id, storetest.TierPayload(id, size)
}

func mustPut(t testing.TB, tier store.Tier, id store.ChunkID, data []byte) {
	t.Helper()
	if err := tier.Put(id, data); err != nil {
		t.Fatalf("Put(%+v): %v", id, err)
	}
}

func mustGet(t testing.TB, tier store.Tier, id store.ChunkID, want []byte) {
	t.Helper()
	got, err := tier.Get(id)
	if err != nil {
		t.Fatalf("Get(%+v): %v", id, err)
	}
	if string(got) != string(want) {
		t.Fatalf("Get(%+v): wrong bytes", id)
	}
}

func mustMiss(t testing.TB, tier store.Tier, id store.ChunkID) {
	t.Helper()
	if _, err := tier.Get(id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get(%+v) = %v, want ErrNotFound", id, err)
	}
}

// diskUsage sums the sizes of the data files under dir.
func diskUsage(t *testing.T, dir string) int64 {
	t.Helper()
	var sum int64
	for _, sub := range []string{"segments", "chunks"} {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			info, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			sum += info.Size()
		}
	}
	return sum
}

// TestRestart: a reopened cache serves the same bytes, with the same usage
// and count, and appends to a fresh segment.
func TestRestart(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: dir, Capacity: 64 << 20, SegmentSize: 256 << 10, SmallMax: 64 << 10}
	tier := openT(t, opts)
	sizes := []int{0, 1, 4 << 10, 60 << 10, 64 << 10, 1 << 20}
	for i := 0; i < 40; i++ {
		id, data := chunk(fmt.Sprintf("k%d", i), i, sizes[i%len(sizes)])
		mustPut(t, tier, id, data)
	}
	before := tier.DiskStats()
	if before.UsedBytes != diskUsage(t, dir) || before.Segments < 2 || before.Files == 0 {
		t.Fatalf("before restart: %+v, files on disk %d bytes", before, diskUsage(t, dir))
	}
	if err := tier.Close(); err != nil {
		t.Fatal(err)
	}
	tier = openT(t, opts)
	after := tier.DiskStats()
	if after.TierStats != before.TierStats || after.Segments != before.Segments || after.Files != before.Files {
		t.Fatalf("stats changed across restart: %+v -> %+v", before, after)
	}
	for i := 0; i < 40; i++ {
		id, data := chunk(fmt.Sprintf("k%d", i), i, sizes[i%len(sizes)])
		mustGet(t, tier, id, data)
	}
	id, data := chunk("after", 0, 100)
	mustPut(t, tier, id, data)
	mustGet(t, tier, id, data)
	if s := tier.DiskStats(); s.Segments != before.Segments+1 {
		t.Fatalf("segments after a put past restart = %d, want %d (a new segment)", s.Segments, before.Segments+1)
	}
	if vs := tier.Versions("b", "k3"); len(vs) != 1 || vs[0] != "e1" {
		t.Fatalf("Versions after restart = %q", vs)
	}
}

// flipByte inverts one byte of a file at off.
func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// lookup returns id's index location.
func lookup(t *testing.T, tier *Tier, id store.ChunkID) index.Location {
	t.Helper()
	loc, err := tier.idx.Lookup(id)
	if err != nil {
		t.Fatalf("index lookup of %+v: %v", id, err)
	}
	return loc
}

// TestCorruption: a flipped byte in a segment or a chunk file is caught
// by the CRC: Get misses, the entry is gone, and the chunk can be put and
// read again.
func TestCorruption(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int
	}{{"segment", 4 << 10}, {"file", 2 << 20}} {
		t.Run(tc.name, func(t *testing.T) {
			tier := openT(t, Options{Dir: t.TempDir(), Capacity: 64 << 20})
			bad, badData := chunk("bad", 0, tc.size)
			good, goodData := chunk("good", 0, tc.size)
			mustPut(t, tier, bad, badData)
			mustPut(t, tier, good, goodData)
			loc := lookup(t, tier, bad)
			path := tier.segPath(loc.Unit)
			if loc.Kind == index.InFile {
				path = tier.chunkPath(loc.Unit)
			}
			flipByte(t, path, loc.Offset+int64(tc.size/2))
			mustMiss(t, tier, bad)
			if _, err := tier.idx.Lookup(bad); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("corrupt entry still indexed: %v", err)
			}
			s := tier.DiskStats()
			if s.Corruptions != 1 || s.Chunks != 1 {
				t.Fatalf("after corruption: %+v", s)
			}
			if _, err := os.Stat(path); loc.Kind == index.InFile && !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("corrupt chunk file not removed: %v", err)
			}
			mustGet(t, tier, good, goodData)
			mustPut(t, tier, bad, badData)
			mustGet(t, tier, bad, badData)
		})
	}
}

// TestShortAndMissing: a truncated segment (short read) and a deleted
// chunk file drop their entries instead of failing or serving garbage.
func TestShortAndMissing(t *testing.T) {
	tier := openT(t, Options{Dir: t.TempDir(), Capacity: 64 << 20})
	small, smallData := chunk("small", 0, 8<<10)
	large, largeData := chunk("large", 0, 2<<20)
	mustPut(t, tier, small, smallData)
	mustPut(t, tier, large, largeData)
	sl, ll := lookup(t, tier, small), lookup(t, tier, large)
	if err := os.Truncate(tier.segPath(sl.Unit), sl.Offset+sl.Length-1); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(tier.chunkPath(ll.Unit)); err != nil {
		t.Fatal(err)
	}
	mustMiss(t, tier, small)
	mustMiss(t, tier, large)
	if s := tier.DiskStats(); s.Corruptions != 2 || s.Chunks != 0 || s.Files != 0 {
		t.Fatalf("after short read and missing file: %+v", s)
	}
	mustPut(t, tier, large, largeData)
	mustGet(t, tier, large, largeData)
}

// TestWatermarks: once usage passes the high watermark, it is brought to
// the low one, and never exceeds the capacity on the way.
func TestWatermarks(t *testing.T) {
	const capacity = 1 << 20
	tier := openT(t, Options{Dir: t.TempDir(), Capacity: capacity, HighWater: 0.9, LowWater: 0.5, SegmentSize: 64 << 10, Policy: PolicyLRU})
	for i := 0; tier.Stats().Evictions == 0; i++ {
		if i > 1000 {
			t.Fatal("no eviction after 10 MiB of puts")
		}
		id, data := chunk(fmt.Sprintf("k%d", i), 0, 10<<10)
		mustPut(t, tier, id, data)
		if s := tier.Stats(); s.UsedBytes > capacity*9/10 {
			t.Fatalf("after put %d: used %d above the high watermark", i, s.UsedBytes)
		}
	}
	s := tier.Stats()
	if s.UsedBytes > capacity/2 || s.UsedBytes < capacity/2-(64<<10) {
		t.Fatalf("after watermark eviction used = %d, want just under %d", s.UsedBytes, capacity/2)
	}
	if s.Chunks == 0 {
		t.Fatal("watermark eviction emptied the cache")
	}
}

// TestUnitLRU: the least recently read unit is evicted first.
func TestUnitLRU(t *testing.T) {
	const size = 200 << 10 // a chunk file each (SmallMax is lower)
	tier := openT(t, Options{Dir: t.TempDir(), Capacity: 1 << 20, SmallMax: 4 << 10, Policy: PolicyLRU})
	var ids []store.ChunkID
	for i := 0; i < 4; i++ {
		id, data := chunk(fmt.Sprintf("k%d", i), 0, size)
		mustPut(t, tier, id, data)
		ids = append(ids, id)
	}
	if _, err := tier.Get(ids[0]); err != nil { // k0 becomes the most recent
		t.Fatal(err)
	}
	id, data := chunk("k4", 0, size) // 1000 KiB: past 95%, evict to 85%
	mustPut(t, tier, id, data)
	mustMiss(t, tier, ids[1])
	for _, keep := range []store.ChunkID{ids[0], ids[2], ids[3], id} {
		if _, err := tier.Get(keep); err != nil {
			t.Fatalf("Get(%s) after eviction: %v", keep.Key, err)
		}
	}
}

// TestOrphansOnReopen: unreferenced files and temp files are removed on
// Open, entries of vanished files are dropped, and foreign files stay.
func TestOrphansOnReopen(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: dir, Capacity: 64 << 20}
	tier := openT(t, opts)
	small, smallData := chunk("small", 0, 4<<10)
	large, largeData := chunk("large", 0, 2<<20)
	lost, lostData := chunk("lost", 0, 2<<20)
	for _, c := range []struct {
		id   store.ChunkID
		data []byte
	}{{small, smallData}, {large, largeData}, {lost, lostData}} {
		mustPut(t, tier, c.id, c.data)
	}
	lostPath := tier.chunkPath(lookup(t, tier, lost).Unit)
	if err := tier.Close(); err != nil {
		t.Fatal(err)
	}
	orphans := []string{
		filepath.Join(dir, "segments", "00000000000000f0.seg"),
		filepath.Join(dir, "chunks", "00000000000000f1.chunk"),
		filepath.Join(dir, "chunks", "00000000000000f2.tmp"),
	}
	for _, p := range append(orphans, filepath.Join(dir, "chunks", "README")) {
		if err := os.WriteFile(p, []byte("leftover"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(lostPath); err != nil {
		t.Fatal(err)
	}
	tier = openT(t, opts)
	for _, p := range orphans {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("orphan %s survived reopen: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "chunks", "README")); err != nil {
		t.Errorf("foreign file removed: %v", err)
	}
	if s := tier.Stats(); s.Chunks != 2 || s.UsedBytes != diskUsage(t, dir)-int64(len("leftover")) {
		t.Fatalf("after reopen: %+v (data files %d bytes)", s, diskUsage(t, dir))
	}
	mustGet(t, tier, small, smallData)
	mustGet(t, tier, large, largeData)
	mustMiss(t, tier, lost)
	// New units are numbered past the orphans, so nothing collides.
	id, data := chunk("new", 0, 2<<20)
	mustPut(t, tier, id, data)
	mustGet(t, tier, id, data)
}

// TestCorruptIndex: an unreadable index file starts the cache empty and
// its data files are removed.
func TestCorruptIndex(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: dir, Capacity: 64 << 20}
	tier := openT(t, opts)
	id, data := chunk("k", 0, 4<<10)
	mustPut(t, tier, id, data)
	if err := tier.Close(); err != nil {
		t.Fatal(err)
	}
	garbage := make([]byte, 64<<10)
	for i := range garbage {
		garbage[i] = byte(i * 7)
	}
	if err := os.WriteFile(filepath.Join(dir, "index.db"), garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	tier = openT(t, opts)
	if s := tier.Stats(); s.Chunks != 0 || s.UsedBytes != 0 || diskUsage(t, dir) != 0 {
		t.Fatalf("after a corrupt index: %+v, data files %d bytes", s, diskUsage(t, dir))
	}
	mustMiss(t, tier, id)
	mustPut(t, tier, id, data)
	mustGet(t, tier, id, data)
}

// TestClosed: operations after Close fail with ErrClosed.
func TestClosed(t *testing.T) {
	tier := openT(t, Options{Dir: t.TempDir(), Capacity: 1 << 20})
	id, data := chunk("k", 0, 10)
	mustPut(t, tier, id, data)
	if err := tier.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tier.Get(id); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close = %v", err)
	}
	if err := tier.Put(id, data); !errors.Is(err, ErrClosed) {
		t.Fatalf("Put after Close = %v", err)
	}
	if err := tier.DeleteObject("b", "k"); !errors.Is(err, ErrClosed) {
		t.Fatalf("DeleteObject after Close = %v", err)
	}
	if vs := tier.Versions("b", "k"); vs != nil {
		t.Fatalf("Versions after Close = %q", vs)
	}
	if err := tier.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

func TestOptions(t *testing.T) {
	for _, bad := range []Options{
		{Capacity: 1 << 20},
		{Dir: "x"},
		{Dir: "x", Capacity: 1 << 20, HighWater: 0.5, LowWater: 0.6},
		{Dir: "x", Capacity: 1 << 20, HighWater: 1.5},
	} {
		if _, err := bad.normalize(); err == nil {
			t.Errorf("normalize(%+v) accepted", bad)
		}
	}
	o, err := Options{Dir: "x", Capacity: 1 << 40}.normalize()
	if err != nil || o.HighWater != DefaultHighWater || o.LowWater != DefaultLowWater ||
		o.SegmentSize != DefaultSegmentSize || o.SmallMax != DefaultSmallMax {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
	o, _ = Options{Dir: "x", Capacity: 1 << 20}.normalize()
	if o.SegmentSize != 128<<10 || o.SmallMax != 128<<10 {
		t.Fatalf("small capacity: segment %d, small max %d", o.SegmentSize, o.SmallMax)
	}
}

// TestInvalidKey: a name too long to index is refused before any write.
func TestInvalidKey(t *testing.T) {
	tier := openT(t, Options{Dir: t.TempDir(), Capacity: 1 << 20})
	id := store.ChunkID{Bucket: "b", Key: string(make([]byte, 40<<10)), ETag: "e"}
	if err := tier.Put(id, []byte("x")); !errors.Is(err, store.ErrInvalidKey) {
		t.Fatalf("Put with a 40 KiB key = %v", err)
	}
	if s := tier.Stats(); s.UsedBytes != 0 {
		t.Fatalf("refused put used %d bytes", s.UsedBytes)
	}
}

// TestEvictWhileReading: a unit evicted while a read holds it stays open
// and intact until the read releases it; then its file goes.
func TestEvictWhileReading(t *testing.T) {
	tier := openT(t, Options{Dir: t.TempDir(), Capacity: 64 << 20})
	id, data := chunk("k", 0, 4<<10)
	mustPut(t, tier, id, data)
	loc := lookup(t, tier, id)
	u := tier.acquire(loc.Unit, true) // as Get does before reading
	if u == nil {
		t.Fatal("unit not live")
	}
	tier.mu.Lock()
	victims, _ := tier.evictLocked(0, false, false)
	tier.mu.Unlock()
	tier.finishEvictions(victims)
	if len(victims) != 1 || tier.Stats().UsedBytes != 0 || tier.Stats().Chunks != 0 {
		t.Fatalf("eviction: %d victims, %+v", len(victims), tier.Stats())
	}
	mustMiss(t, tier, id)
	got, err := tier.readChunk(u, loc, nil)
	if err != nil || string(got) != string(data) {
		t.Fatalf("read of an evicted unit still held: %v", err)
	}
	if _, err := os.Stat(tier.segPath(loc.Unit)); err != nil {
		t.Fatalf("segment unlinked while held: %v", err)
	}
	tier.release(u)
	if _, err := os.Stat(tier.segPath(loc.Unit)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("segment still there after the last release: %v", err)
	}
}

// TestReopenSmallerCapacity: reopening with a lower capacity evicts down
// to the low watermark.
func TestReopenSmallerCapacity(t *testing.T) {
	dir := t.TempDir()
	tier := openT(t, Options{Dir: dir, Capacity: 64 << 20})
	for i := 0; i < 8; i++ {
		id, data := chunk(fmt.Sprintf("k%d", i), 0, 1<<20)
		mustPut(t, tier, id, data)
	}
	if err := tier.Close(); err != nil {
		t.Fatal(err)
	}
	const capacity = 4 << 20
	tier = openT(t, Options{Dir: dir, Capacity: capacity})
	s := tier.Stats()
	if s.UsedBytes > capacity*85/100 || s.Evictions == 0 || s.Chunks == 0 || s.UsedBytes != diskUsage(t, dir) {
		t.Fatalf("after reopening with capacity %d: %+v, files %d bytes", capacity, s, diskUsage(t, dir))
	}
	id, data := chunk("k7", 0, 1<<20) // the newest unit survives
	mustGet(t, tier, id, data)
}
