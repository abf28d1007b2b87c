// Node ids: the numbers the kernel names files and directories by, one
// per live node, each recorded with what it names and how many lookups
// the kernel holds on it, so that a worker replacing a dead one can
// serve ids it never handed out (revive.go).
package fuse

import (
	"context"
	"os"
	"strconv"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// gone is the key of a node whose name is gone (unlinked, or never
// recorded): a key no object has.
const gone = "\x00gone"

// nodeDesc is what a node id names: enough to make the node again.
type nodeDesc struct {
	dir bool
	// key is a file's object key, or a directory's prefix ("" for the
	// mount's root, else ending in "/").
	key string
	// info is a file's version when the node was made: on a read-only
	// mount the node serves that version only.
	info objInfo
}

// idEntry is one id the kernel holds, or is about to be handed.
type idEntry struct {
	desc nodeDesc
	// kernel counts the lookups the kernel holds on the id; after a
	// restart it may count more than the kernel holds (a reply lost
	// with the dead worker, a forget it read), never fewer.
	kernel uint64
	// bridge counts the lookups go-fuse's node tree in this process
	// holds; the tree has the node exactly while bridge > 0.
	bridge uint64
	// journaled: desc is in the journal.
	journaled bool
}

// nodeTable is every id the kernel may hold. Invariants: an id names one
// node (one key, and on a read-only mount one version of it) for as long
// as the kernel holds it; bridge <= kernel once a revived id's forgets
// arrive, and both reach 0 together.
type nodeTable struct {
	pinned bool // read-only mount: a file node is one version

	mu sync.RWMutex // guards the fields below
	m  map[uint64]*idEntry
	j  *journal // nil unless the mount is a supervised session
	// compacting: a rewrite of the journal runs (compactions waits
	// for it).
	compacting  bool
	compactions sync.WaitGroup
}

func newNodeTable(pinned bool, j *journal) *nodeTable {
	t := &nodeTable{pinned: pinned, m: make(map[uint64]*idEntry), j: j}
	if j != nil {
		t.m, j.replayed = j.replayed, nil
	}
	return t
}

// same reports whether a and b name the same node.
func (t *nodeTable) same(a, b nodeDesc) bool {
	if a.dir != b.dir || a.key != b.key {
		return false
	}
	return a.dir || !t.pinned || (a.info.etag == b.info.etag && a.info.size == b.info.size)
}

// claim returns the id for a new node of d: the one the kernel holds for
// the same node if any, else inoOf its key, or, when another node holds
// that, the first free one of a sequence derived from the key.
func (t *nodeTable) claim(d nodeDesc) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := 0; ; i++ {
		key := d.key
		if i > 0 {
			key += "\x00" + strconv.Itoa(i)
		}
		id := inoOf(key, d.dir)
		e, ok := t.m[id]
		if !ok {
			t.m[id] = &idEntry{desc: d}
			return id
		}
		if t.same(e.desc, d) {
			if !d.dir {
				e.desc.info = d.info
			}
			return id
		}
	}
}

// rekey records that a renamed file node now names key.
func (t *nodeTable) rekey(id uint64, key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.m[id]; ok {
		e.desc.key = key
		t.journalDescLocked(id, e)
		if t.j != nil {
			t.j.flush() // before the rename's reply
		}
	}
}

// unlinked records that id's name is gone: no new node merges with it,
// and a worker that replaces this one answers ESTALE for it.
func (t *nodeTable) unlinked(id uint64) {
	t.rekey(id, gone)
}

// looked records a lookup of each of ids that the bridge counted and the
// kernel will get, journaled (one write) before the reply leaves.
func (t *nodeTable) looked(ids ...uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range ids {
		if id <= fuse.FUSE_ROOT_ID {
			continue
		}
		e, ok := t.m[id]
		if !ok {
			// Not made through claim: count it, it cannot be revived.
			e = &idEntry{desc: nodeDesc{key: gone}, journaled: true}
			t.m[id] = e
		}
		e.kernel++
		e.bridge++
		if !e.journaled {
			t.journalDescLocked(id, e)
		}
		if t.j != nil {
			t.j.add(id)
		}
	}
	if t.j != nil {
		t.j.flush()
	}
}

func (t *nodeTable) journalDescLocked(id uint64, e *idEntry) {
	if t.j != nil {
		t.j.describe(id, e.desc)
		e.journaled = true
	}
}

// forget records that the kernel dropped n lookups of id, and returns
// how many of the bridge's to drop: the bridge keeps at most as many
// as the kernel still holds, and at least one while the kernel holds
// any.
func (t *nodeTable) forget(id, n uint64) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.m[id]
	if !ok {
		return 0
	}
	e.kernel -= min(n, e.kernel)
	keep := min(e.bridge, e.kernel)
	drop := e.bridge - keep
	e.bridge = keep
	if t.j != nil {
		t.j.forget(id, n)
	}
	if e.kernel == 0 && e.bridge == 0 {
		delete(t.m, id)
	}
	return drop
}

// served reports whether the bridge has a node for id.
func (t *nodeTable) served(id uint64) bool {
	if id <= fuse.FUSE_ROOT_ID {
		return true
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	e, ok := t.m[id]
	return ok && e.bridge > 0
}

// desc returns what id names, if the kernel may hold it.
func (t *nodeTable) desc(id uint64) (nodeDesc, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	e, ok := t.m[id]
	if !ok || e.desc.key == gone {
		return nodeDesc{}, false
	}
	return e.desc, true
}

// revived records that the bridge made id's node again for the kernel,
// which still holds it: one lookup the kernel does not know of.
func (t *nodeTable) revived(id uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.m[id]; ok {
		e.bridge++
		e.kernel = max(e.kernel, 1)
	}
}

// maybeCompact rewrites the journal in the background when most of it
// is dead: a copy of the live ids is written beside it without the
// lock, then what was appended meanwhile follows it and it takes the
// journal's place. Ids gone from the table but held by the kernel's
// records (gone ones) are kept, so that no other node takes their
// number while the kernel holds it.
func (t *nodeTable) maybeCompact() {
	t.mu.Lock()
	defer t.mu.Unlock()
	j := t.j
	if j == nil || t.compacting || !j.wantsCompaction(len(t.m)) {
		return
	}
	snap := make(map[uint64]idEntry, len(t.m))
	for id, e := range t.m {
		if e.kernel > 0 {
			snap[id] = idEntry{desc: e.desc, kernel: e.kernel}
		}
	}
	j.flush()
	from := j.size
	j.records = 0
	t.compacting = true
	t.compactions.Add(1)
	go func() {
		defer t.compactions.Done()
		tmp, err := j.snapshot(snap)
		t.mu.Lock()
		defer t.mu.Unlock()
		t.compacting = false
		switch {
		case err == nil && j.broken: // closed meanwhile
			os.Remove(tmp)
		case err == nil:
			err = j.swap(tmp, from, 2*len(snap))
		}
		if err != nil {
			j.log.Warn().Err(err).Str("journal", j.path).Msg("fuse: node journal not compacted; it keeps growing")
		}
	}()
}

// close flushes the journal, after a compaction in progress (nil: a
// mount that failed before it had a table).
func (t *nodeTable) close() {
	if t == nil {
		return
	}
	t.compactions.Wait()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.j != nil {
		t.j.close()
	}
}

// LookupNode makes the node for id again from the node table: a worker
// serving an id a dead one handed out (revive.go). Only the root's is
// called. A read-only mount's file is remade pinned to the version it
// had: its reads fail (EIO) if the object changed since, never mixing
// two versions.
func (d *dirNode) LookupNode(ctx context.Context, id uint64, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	f := d.fsys
	desc, ok := f.ids.desc(id)
	if !ok {
		return nil, syscall.ESTALE
	}
	if desc.dir {
		f.dirAttr(&out.Attr)
		return d.NewInode(ctx, &dirNode{fsys: f, prefix: desc.key}, fs.StableAttr{Mode: fuse.S_IFDIR, Ino: id}), 0
	}
	// seen is zero: a read-write mount looks at the object again first.
	n := &fileNode{fsys: f, key: desc.key, info: desc.info, pinned: f.opts.ReadOnly}
	f.fileAttr(&out.Attr, id, desc.info)
	return d.NewInode(ctx, n, fs.StableAttr{Mode: fuse.S_IFREG, Ino: id}), 0
}
