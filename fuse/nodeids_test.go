// Tests of node ids: claims, lookup counting, the journal's replay
// (torn tails, compaction) and the READDIRPLUS parser.
package fuse

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/rs/zerolog"
)

func TestClaimKeepsOneIDPerNode(t *testing.T) {
	v1 := objInfo{size: 10, etag: "a", mtime: time.Unix(100, 0)}
	v2 := objInfo{size: 11, etag: "b", mtime: time.Unix(200, 0)}
	pinned := newNodeTable(true, nil)
	a := pinned.claim(nodeDesc{key: "x", info: v1})
	if a != inoOf("x", false) || pinned.claim(nodeDesc{key: "x", info: v1}) != a {
		t.Fatalf("the same version of x: ids %d, want inoOf(x) each time", a)
	}
	b := pinned.claim(nodeDesc{key: "x", info: v2})
	if b == a {
		t.Fatal("a read-only mount's new version of x shares the old version's id")
	}
	if d := pinned.claim(nodeDesc{dir: true, key: "x"}); d == a || d == b {
		t.Fatal("directory x shares a file's id")
	}
	rw := newNodeTable(false, nil)
	a = rw.claim(nodeDesc{key: "x", info: v1})
	if rw.claim(nodeDesc{key: "x", info: v2}) != a {
		t.Fatal("a read-write mount made two nodes of x")
	}
	rw.looked(a)
	rw.unlinked(a)
	if rw.claim(nodeDesc{key: "x", info: v2}) == a {
		t.Fatal("a new x merged with the unlinked one the kernel still holds")
	}
	if _, ok := rw.desc(a); ok {
		t.Fatal("an unlinked node can be revived")
	}
}

func TestForgetKeepsBridgeWithinKernel(t *testing.T) {
	tb := newNodeTable(true, nil)
	id := tb.claim(nodeDesc{key: "k"})
	tb.looked(id)
	tb.looked(id)
	if drop := tb.forget(id, 1); drop != 1 || !tb.served(id) {
		t.Fatalf("forget 1 of 2: drop %d, served %v", drop, tb.served(id))
	}
	if drop := tb.forget(id, 1); drop != 1 || tb.served(id) {
		t.Fatalf("forget the last: drop %d, served %v", drop, tb.served(id))
	}
	if _, ok := tb.desc(id); ok {
		t.Fatal("a forgotten id is still held")
	}
	// An id revived after a restart: the kernel held 4 lookups, the
	// bridge 1; the bridge keeps it until the kernel's last forget.
	tb.m[id] = &idEntry{desc: nodeDesc{key: "k"}, kernel: 4, journaled: true}
	tb.revived(id)
	for i, want := range []uint64{0, 0, 0, 1} {
		if drop := tb.forget(id, 1); drop != want {
			t.Fatalf("forget %d after a revival: drop %d, want %d", i+1, drop, want)
		}
	}
	if tb.served(id) {
		t.Fatal("still served after the kernel forgot it")
	}
}

func TestJournalReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nodes")
	j, err := openJournal(path, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	tb := newNodeTable(true, j)
	mtime := time.Unix(1700000000, 123)
	file := tb.claim(nodeDesc{key: "a/b.bin", info: objInfo{size: 42, etag: `"e"`, mtime: mtime}})
	dir := tb.claim(nodeDesc{dir: true, key: "a/"})
	gone := tb.claim(nodeDesc{key: "tmp"})
	dropped := tb.claim(nodeDesc{key: "read-once"})
	for _, id := range []uint64{file, file, dir, gone, dropped} {
		tb.looked(id)
	}
	tb.unlinked(gone)
	tb.forget(file, 1)
	tb.forget(dropped, 1)
	tb.close()
	// A worker killed mid-write leaves a torn record at the end.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{recDesc, 1, 2, 3})
	f.Close()

	j2, err := openJournal(path, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t2 := newNodeTable(true, j2)
	defer t2.close()
	if d, ok := t2.desc(file); !ok || d.key != "a/b.bin" || d.info.size != 42 || d.info.etag != `"e"` || !d.info.mtime.Equal(mtime) {
		t.Errorf("file after replay: %+v %v", d, ok)
	}
	if d, ok := t2.desc(dir); !ok || !d.dir || d.key != "a/" {
		t.Errorf("directory after replay: %+v %v", d, ok)
	}
	if _, ok := t2.desc(gone); ok {
		t.Error("an unlinked id can be revived after replay")
	}
	if e := t2.m[gone]; e == nil || e.kernel != 1 {
		t.Error("an unlinked id the kernel holds was dropped: another node could take its number")
	}
	if _, ok := t2.m[dropped]; ok {
		t.Error("an id the kernel forgot survived the replay")
	}
	if t2.m[file].kernel != 1 || t2.served(file) {
		t.Errorf("file: kernel %d, served %v; want 1 and not served (no node in this process yet)", t2.m[file].kernel, t2.served(file))
	}
	// The torn record was cut off: appends follow the last whole one.
	if st, err := os.Stat(path); err != nil || st.Size() != j2.size {
		t.Errorf("journal of %v bytes after the torn record, want %d", st.Size(), j2.size)
	}
}

// replayFile replays the journal at path.
func replayFile(t *testing.T, path string) map[uint64]*idEntry {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	live, good, _ := replay(data)
	if good != len(data) {
		t.Errorf("journal %s: a torn record at %d of %d bytes", path, good, len(data))
	}
	return live
}

func TestJournalCompacts(t *testing.T) {
	saved := compactAfter
	compactAfter = 1000
	defer func() { compactAfter = saved }()
	j, err := openJournal(filepath.Join(t.TempDir(), "nodes"), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	tb := newNodeTable(false, j)
	defer tb.close()
	keep := tb.claim(nodeDesc{key: "keep"})
	tb.looked(keep)
	id := tb.claim(nodeDesc{key: "churn"})
	for range 4 * compactAfter {
		tb.looked(id)
		tb.forget(id, 1)
		tb.maybeCompact()
		id = tb.claim(nodeDesc{key: "churn"})
	}
	tb.compactions.Wait() // one may have run while the records piled up
	tb.maybeCompact()
	tb.compactions.Wait()
	tb.mu.Lock()
	j.flush()
	tb.mu.Unlock()
	st, _ := os.Stat(j.path)
	live := replayFile(t, j.path)
	// It holds a snapshot and fewer than compactAfter records after
	// it (about 22 KiB); without compaction, 4000 rounds of 3 records
	// (over 250 KiB).
	if len(live) != 1 || live[keep] == nil || live[keep].kernel != 1 || st.Size() > 64<<10 {
		t.Errorf("after compaction: %d live ids, file %d bytes", len(live), st.Size())
	}
}

func TestDirentplusNodes(t *testing.T) {
	buf := make([]byte, 4096)
	l := fuse.NewDirEntryList(buf, 0)
	for i, name := range []string{".", "a", "bbbbbbbbbbbbbbbbbbbbbbbbbbb", "c"} {
		e := l.AddDirLookupEntry(fuse.DirEntry{Name: name, Mode: fuse.S_IFREG, Ino: uint64(i + 10)})
		if name != "." && name != "c" {
			e.NodeId = uint64(100 + i)
		}
	}
	got := direntplusNodes(l.Bytes())
	if len(got) != 2 || got[0] != 101 || got[1] != 102 {
		t.Fatalf("node ids %v, want [101 102]", got)
	}
}

// TestJournalSwapKeepsTheTail: what is appended while a snapshot is
// written follows the snapshot in the journal that replaces the old one.
func TestJournalSwapKeepsTheTail(t *testing.T) {
	j, err := openJournal(filepath.Join(t.TempDir(), "nodes"), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	tb := newNodeTable(true, j)
	a, b := tb.claim(nodeDesc{key: "a"}), tb.claim(nodeDesc{key: "b"})
	tb.looked(a)
	tb.looked(b)
	snap := map[uint64]idEntry{a: *tb.m[a], b: *tb.m[b]}
	j.flush()
	from := j.size
	tmp, err := j.snapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	c := tb.claim(nodeDesc{key: "c"}) // appended after the snapshot
	tb.looked(c)
	tb.forget(a, 1)
	if err := j.swap(tmp, from, 4); err != nil {
		t.Fatal(err)
	}
	tb.looked(b) // appended to the new file
	tb.close()
	live := replayFile(t, j.path)
	if len(live) != 2 || live[a] != nil || live[b] == nil || live[b].kernel != 2 || live[c] == nil || live[c].desc.key != "c" {
		t.Errorf("after the swap: %d live ids (a %v, b %+v, c %+v)", len(live), live[a], live[b], live[c])
	}
}

// BenchmarkJournalOpen1M is a new worker's start with a million ids held
// by the kernel (a data set of a million files listed): the journal's
// replay, which the trainer waits for after a crash. In `make bench`.
func BenchmarkJournalOpen1M(b *testing.B) {
	path := filepath.Join(b.TempDir(), "nodes")
	j, err := openJournal(path, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	tb := newNodeTable(true, j)
	info := objInfo{size: 110_000, etag: `"0123456789abcdef0123456789abcdef"`, mtime: time.Unix(1700000000, 0)}
	for i := range 1_000_000 {
		tb.looked(tb.claim(nodeDesc{key: fmt.Sprintf("imagenet/train/n%08d/img_%08d.JPEG", i/1000, i), info: info}))
	}
	tb.close()
	st, _ := os.Stat(path)
	for b.Loop() {
		j, err := openJournal(path, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		if t := newNodeTable(true, j); len(t.m) != 1_000_000 {
			b.Fatalf("%d ids replayed", len(t.m))
		}
		j.close()
	}
	b.ReportMetric(float64(st.Size())/(1<<20), "journal-MiB")
}

// A compaction with nothing appended while it ran keeps the journal's
// size right: it was once the new file's offset (0: O_APPEND moves it
// only on a write), so the next compaction copied its tail from inside
// the snapshot, a torn record on replay.
func TestJournalSwapWithoutATail(t *testing.T) {
	j, err := openJournal(filepath.Join(t.TempDir(), "nodes"), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	j.describe(7, nodeDesc{key: "keep"})
	j.add(7)
	j.flush()
	tmp, err := j.snapshot(map[uint64]idEntry{7: {desc: nodeDesc{key: "keep"}, kernel: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.swap(tmp, j.size, 2); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(j.path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != j.size {
		t.Fatalf("journal of %d bytes, its size says %d", st.Size(), j.size)
	}
	j.forget(7, 1)
	j.add(7)
	j.flush()
	if live := replayFile(t, j.path); len(live) != 1 || live[7] == nil || live[7].kernel != 1 {
		t.Errorf("after the swap: %d live ids", len(live))
	}
}
