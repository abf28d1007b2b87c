// Tests of the arena: arena chunks are lent in place and in their file,
// a lease keeps a chunk's bytes past its eviction, emptied slots are
// reused without a page leaked, and a page the kernel is sending survives
// its slot being emptied and written again.
package ram

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/storetest"
)

func newSendable(t *testing.T, capacity int64) *Tier {
	t.Helper()
	tier := New(Options{Capacity: capacity, Policy: PolicyLRU, Sendable: true})
	if err := tier.Sendable(); err != nil {
		t.Fatalf("no arena: %v", err)
	}
	t.Cleanup(func() { _ = tier.Close() })
	return tier
}

// arenaChunk is chunk i's bytes: n of them, each telling i and its place.
func arenaChunk(i, n int) []byte {
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(i*31 + j/4096)
	}
	return b
}

func arenaID(i int) store.ChunkID {
	return store.ChunkID{Bucket: "b", Key: fmt.Sprintf("k%d", i), ETag: "e"}
}

func TestSendableConformance(t *testing.T) {
	storetest.RunTier(t, func(t *testing.T, capacity int64) store.Tier { return newSendable(t, capacity) })
}

// TestArenaLends: a chunk of ArenaMin to ArenaMax bytes is copied by Put
// (its buffer the caller's again) and lent in place with a FileSpan whose
// file holds its bytes; Get copies it; a smaller or larger chunk is kept
// on the heap as it was given, lent with no lease.
func TestArenaLends(t *testing.T) {
	tier := newSendable(t, 64<<20) // holds them all
	sizes := map[int]bool{200 << 10: true, ArenaMin: true, ArenaMax: true, ArenaMin - 1: false, ArenaMax + 1: false, 4 << 10: false}
	i := 0
	for n, inArena := range sizes {
		i++
		id, want := arenaID(i), arenaChunk(i, n)
		buf := bytes.Clone(want)
		if err := tier.Put(id, buf); err != nil {
			t.Fatal(err)
		}
		if tier.PutCopies(n) != inArena {
			t.Fatalf("%d bytes: PutCopies %v, want %v", n, !inArena, inArena)
		}
		if inArena {
			clear(buf) // the caller's buffer is its own again
		}
		b, lease, err := tier.Lend(id, true)
		if err != nil || !bytes.Equal(b, want) {
			t.Fatalf("%d bytes: lent %d bytes, %v", n, len(b), err)
		}
		if (lease != nil) != inArena {
			t.Fatalf("%d bytes: lease %v, want one: %v", n, lease, inArena)
		}
		if lease == nil {
			continue
		}
		fd, off := lease.(store.FileSpan).File()
		got := make([]byte, n)
		if _, err := unix.Pread(int(fd), got, off); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%d bytes: the file at %d differs (%v)", n, off, err)
		}
		c, err := tier.Get(id)
		if err != nil || !bytes.Equal(c, want) || &c[0] == &b[0] {
			t.Fatalf("%d bytes: Get is not a copy of the chunk (%v)", n, err)
		}
		lease.Release()
	}
}

// TestArenaLeaseOutlivesEviction: a lent chunk keeps its bytes while
// later chunks evict it and take slots of its class; once released its
// slot is emptied and reused, and the arena's pages are those of the
// chunks the tier holds.
func TestArenaLeaseOutlivesEviction(t *testing.T) {
	const n = 200 << 10
	tier := newSendable(t, 4*tierCost(n)+64) // keys of 2 digits cost a byte more
	if err := tier.Put(arenaID(0), arenaChunk(0, n)); err != nil {
		t.Fatal(err)
	}
	b, lease, err := tier.Lend(arenaID(0), true)
	if err != nil || lease == nil {
		t.Fatalf("lend: %v, lease %v", err, lease)
	}
	for i := 1; i <= 12; i++ { // evicts chunk 0, and reuses emptied slots
		if err := tier.Put(arenaID(i), arenaChunk(i, n)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tier.Get(arenaID(0)); err == nil {
		t.Fatal("chunk 0 was not evicted")
	}
	if !bytes.Equal(b, arenaChunk(0, n)) {
		t.Fatal("an evicted chunk's lent bytes changed under its lease")
	}
	if got := arenaCount(tier, slotsOf); got != 5 {
		t.Fatalf("%d slots in use, want 4 held and 1 leased", got)
	}
	lease.Release()
	pages := int64((n + pageSize - 1) / pageSize)
	if slots, pg := arenaCount(tier, slotsOf), arenaCount(tier, pagesOf); slots != 4 || pg != 4*pages {
		t.Fatalf("after the release: %d slots, %d pages; want 4, %d", slots, pg, 4*pages)
	}
	if got := tier.Stats().FileBytes; got != 4*pages*pageSize {
		t.Fatalf("the tier reports %d bytes in its file, want %d", got, 4*pages*pageSize)
	}
	if top := arenaCount(tier, topOf); top > 6*classPages[classOf(n)]*pageSize {
		t.Fatalf("the arena handed out %d bytes of slots for 13 chunks of which 5 lived at once", top)
	}
	for i := 9; i <= 12; i++ {
		if got, err := tier.Get(arenaID(i)); err != nil || !bytes.Equal(got, arenaChunk(i, n)) {
			t.Fatalf("chunk %d: %v", i, err)
		}
	}
}

// arenaCount sums a count of the tier's arena files.
func arenaCount(tier *Tier, count func(*arena) int64) int64 { return tier.arena.sum(count) }

// The counts arenaCount sums: slots in use, pages written, users of the
// mapping, and the addresses handed out.
func slotsOf(a *arena) int64 { return a.slots.Load() }
func pagesOf(a *arena) int64 { return a.pages.Load() }
func usersOf(a *arena) int64 { return a.leases.Load() }
func topOf(a *arena) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.top
}

// tierCost is the budget a chunk of n bytes takes in the arena.
func tierCost(n int) int64 {
	return charge(arenaID(0), make([]byte, (n+pageSize-1)/pageSize*pageSize))
}

// TestArenaSpreadsWrites: chunks put one after another land in every
// memory file, so that concurrent writes do not queue on one file's lock.
func TestArenaSpreadsWrites(t *testing.T) {
	tier := newSendable(t, 64<<20)
	for i := range 2 * arenaFiles {
		if err := tier.Put(arenaID(i), arenaChunk(i, ArenaMin)); err != nil {
			t.Fatal(err)
		}
	}
	for i, a := range tier.arena.files {
		if got := a.slots.Load(); got != 2 {
			t.Errorf("file %d holds %d of %d chunks, want 2", i, got, 2*arenaFiles)
		}
	}
	for i := range 2 * arenaFiles {
		if got, err := tier.Get(arenaID(i)); err != nil || !bytes.Equal(got, arenaChunk(i, ArenaMin)) {
			t.Fatalf("chunk %d: %v", i, err)
		}
	}
}

// TestArenaCloseWithLease: a tier closed while a chunk is lent keeps its
// bytes mapped until the lease is released.
func TestArenaCloseWithLease(t *testing.T) {
	tier := New(Options{Capacity: 1 << 20, Sendable: true})
	want := arenaChunk(1, ArenaMin)
	if err := tier.PutAlways(arenaID(1), bytes.Clone(want)); err != nil {
		t.Fatal(err)
	}
	b, lease, err := tier.Lend(arenaID(1), false)
	if err != nil || lease == nil {
		t.Fatalf("lend: %v", err)
	}
	tier.Close()
	if !bytes.Equal(b, want) {
		t.Fatal("a closed tier's lent bytes changed")
	}
	lease.Release()
	if users := arenaCount(tier, usersOf); users != 0 {
		t.Fatalf("%d users of the mappings left", users)
	}
}

// TestArenaSendSurvivesReuse is the arena's reason to be safe: bytes
// sendfile handed to a socket are the chunk's even when its slot is
// emptied and written with another chunk before the socket's reader
// reads them.
func TestArenaSendSurvivesReuse(t *testing.T) {
	const n = ArenaMin // fits the sockets' buffers unread (tcpPair)
	tier := newSendable(t, 2*tierCost(n))
	if err := tier.Put(arenaID(0), arenaChunk(0, n)); err != nil {
		t.Fatal(err)
	}
	_, lease, err := tier.Lend(arenaID(0), true)
	if err != nil || lease == nil {
		t.Fatalf("lend: %v", err)
	}
	client, server := tcpPair(t)
	fd, off := lease.(store.FileSpan).File()
	sendFile(t, server, fd, off, n)
	lease.Release()
	tier.DeleteObject("b", "k0") // the slot empties ...
	if err := tier.Put(arenaID(1), arenaChunk(1, n)); err != nil {
		t.Fatal(err)
	}
	b1, l1, _ := tier.Lend(arenaID(1), true)
	if fd1, off1 := l1.(store.FileSpan).File(); fd1 != fd || off1 != off {
		t.Fatalf("chunk 1 is at %d, not in chunk 0's emptied slot at %d", off1, off)
	}
	if !bytes.Equal(b1, arenaChunk(1, n)) {
		t.Fatal("chunk 1 reads wrong")
	}
	l1.Release() // ... and holds another chunk
	got := make([]byte, n)
	client.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := io.ReadFull(client, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, arenaChunk(0, n)) {
		t.Fatal("the socket delivered bytes its slot was rewritten with")
	}
}

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server *net.TCPConn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	client, server = c.(*net.TCPConn), s.(*net.TCPConn)
	// Room for a chunk sent and not read yet.
	if err := client.SetReadBuffer(4 << 20); err != nil {
		t.Fatal(err)
	}
	if err := server.SetWriteBuffer(4 << 20); err != nil {
		t.Fatal(err)
	}
	return client, server
}

// sendFile sends n bytes of the file fd from off to conn with sendfile.
func sendFile(t *testing.T, conn *net.TCPConn, fd uintptr, off int64, n int) {
	t.Helper()
	raw, err := conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	conn.SetWriteDeadline(time.Now().Add(time.Minute))
	var serr error
	err = raw.Write(func(s uintptr) bool {
		for n > 0 {
			k, err := unix.Sendfile(int(s), int(fd), &off, n)
			n -= max(k, 0)
			if err == unix.EAGAIN {
				return false
			}
			if err != nil {
				serr = err
				return true
			}
		}
		return true
	})
	if err != nil || serr != nil {
		t.Fatalf("sendfile: %v %v", err, serr)
	}
}

// TestArenaChurn: readers lending chunks while writers evict them always
// read each chunk's own bytes, and when all is done the arena holds the
// pages of the chunks the tier holds, no more.
func TestArenaChurn(t *testing.T) {
	const n, keys = ArenaMin + 1000, 64
	tier := newSendable(t, 16*tierCost(n))
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 400 {
				k := (i*7 + w) % keys
				if i%3 == 0 {
					tier.Put(arenaID(k), arenaChunk(k, n)) //nolint:errcheck // full or present: either is fine
					continue
				}
				b, lease, err := tier.Lend(arenaID(k), true)
				if err != nil {
					continue
				}
				if !bytes.Equal(b, arenaChunk(k, n)) {
					errs <- fmt.Errorf("chunk %d read another's bytes", k)
				}
				lease.Release()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := tier.Stats()
	slots, pg := arenaCount(tier, slotsOf), arenaCount(tier, pagesOf)
	if slots != st.Chunks || pg != st.Chunks*((n+pageSize-1)/pageSize) {
		t.Fatalf("the arena has %d slots, %d pages for %d chunks", slots, pg, st.Chunks)
	}
}

// BenchmarkArenaPutParallel puts 1 MiB chunks from eight goroutines per
// core (16 here) into a tier with room for them all (so each is written before the tier's
// lock), the way a cold pass of many readers fills RAM. cpu-ms/MiB is
// the process's CPU time per MiB put: what the writes cost the node,
// waiting included. The kernel takes a file's writes one at a time (the
// inode's lock) and its waiters spin: with one file, 0.99-1.11 ms per MiB
// here; with arenaFiles, 0.59-0.67. Queueing one file's writes on a Go
// mutex instead cut it to 0.59-0.71 here, but slowed a real cold pass
// (1,000 x 1 MiB at 128 readers: 4.8-5.5 s against 3.9-4.3 s, the
// working memory full): a waiter Go wakes waits behind every runnable
// request goroutine.
func BenchmarkArenaPutParallel(b *testing.B) {
	tier := New(Options{Capacity: 8 << 30, Policy: PolicyLRU, Sendable: true})
	if err := tier.Sendable(); err != nil {
		b.Fatalf("no arena: %v", err)
	}
	defer tier.Close()
	chunk := arenaChunk(1, 1<<20)
	var next atomic.Int64
	b.SetBytes(int64(len(chunk)))
	b.SetParallelism(8)
	c0 := cpuTime(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := tier.Put(arenaID(int(next.Add(1))), chunk); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(cpuTime(b)-c0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/MiB")
}

// cpuTime is the process's CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var r unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &r); err != nil {
		b.Fatal(err)
	}
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}
