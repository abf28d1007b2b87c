// The node journal of a supervised mount: an append-only file in the
// supervisor's state directory recording each node id the kernel is
// handed, what it names, and the lookups the kernel gains and drops, so
// that the next worker knows every id the kernel may still hold.
package fuse

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"
)

// Record kinds. Every record starts with its kind and a node id.
const (
	recDesc   = 'D' // dir u8, size i64, mtime ns i64, etag (u16 len), key (u32 len)
	recAdd    = '+' // n u64: the kernel gained n lookups
	recForget = '-' // n u64: the kernel dropped n lookups
)

const (
	// journalFlushAt bounds the forget records held back before a
	// write: losing them to a crash only keeps ids alive longer.
	journalFlushAt = 4 << 10
)

// compactAfter: the journal is rewritten once it holds this many records
// since the last rewrite and 8 times more than live ids (a variable for
// tests).
var compactAfter = 1 << 20

// journalEntry is one live id as replayed.
type journalEntry struct {
	desc   nodeDesc
	kernel uint64
}

// journal appends records to its file. Its methods are called with the
// node table's lock held, which serializes them.
type journal struct {
	path    string
	f       *os.File
	buf     []byte
	records int // since the last rewrite
	log     zerolog.Logger
	broken  bool // a write failed: nothing more is recorded
	// replayed is what the file held when opened, for the table.
	replayed map[uint64]journalEntry
}

// openJournal replays the journal at path (a torn last record, from a
// worker killed mid-write, ends it) and rewrites it with the live ids
// only.
func openJournal(path string, log zerolog.Logger) (*journal, error) {
	live, err := replayJournal(path)
	if err != nil {
		return nil, err
	}
	j := &journal{path: path, log: log}
	if err := j.compact(live); err != nil {
		return nil, err
	}
	j.replayed = live
	return j, nil
}

func replayJournal(path string) (map[uint64]journalEntry, error) {
	live := make(map[uint64]journalEntry)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return live, nil
	}
	if err != nil {
		return nil, fmt.Errorf("fuse: node journal: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		kind, id, e, n, err := readRecord(r)
		if err != nil {
			break // the end, or a torn record
		}
		cur := live[id]
		switch kind {
		case recDesc:
			cur.desc = e
		case recAdd:
			if cur.desc == (nodeDesc{}) {
				cur.desc.key = gone // no description: kept, never revived
			}
			cur.kernel += n
		case recForget:
			cur.kernel -= min(n, cur.kernel)
		}
		live[id] = cur
	}
	for id, e := range live {
		if e.kernel == 0 {
			delete(live, id)
		}
	}
	return live, nil
}

// readRecord reads one record: its kind, id, and a description or a
// count.
func readRecord(r *bufio.Reader) (kind byte, id uint64, d nodeDesc, n uint64, err error) {
	var head [9]byte
	if _, err = io.ReadFull(r, head[:]); err != nil {
		return
	}
	kind, id = head[0], binary.LittleEndian.Uint64(head[1:])
	switch kind {
	case recAdd, recForget:
		var b [8]byte
		_, err = io.ReadFull(r, b[:])
		n = binary.LittleEndian.Uint64(b[:])
	case recDesc:
		var b [17]byte
		if _, err = io.ReadFull(r, b[:]); err != nil {
			return
		}
		d.dir = b[0] == 1
		d.info.size = int64(binary.LittleEndian.Uint64(b[1:]))
		d.info.mtime = time.Unix(0, int64(binary.LittleEndian.Uint64(b[9:])))
		var etag, key []byte
		if etag, err = readLen(r, 2); err != nil {
			return
		}
		if key, err = readLen(r, 4); err != nil {
			return
		}
		d.info.etag, d.key = string(etag), string(key)
	default:
		err = fmt.Errorf("fuse: node journal: record kind %q", kind)
	}
	return
}

// readLen reads a string prefixed by its length in size bytes.
func readLen(r *bufio.Reader, size int) ([]byte, error) {
	var b [4]byte
	if _, err := io.ReadFull(r, b[:size]); err != nil {
		return nil, err
	}
	n := int(binary.LittleEndian.Uint16(b[:]))
	if size == 4 {
		n = int(binary.LittleEndian.Uint32(b[:]))
	}
	out := make([]byte, n)
	_, err := io.ReadFull(r, out)
	return out, err
}

func appendRecord(buf []byte, kind byte, id uint64) []byte {
	buf = append(buf, kind)
	return binary.LittleEndian.AppendUint64(buf, id)
}

func appendDesc(buf []byte, id uint64, d nodeDesc) []byte {
	buf = appendRecord(buf, recDesc, id)
	dir := byte(0)
	if d.dir {
		dir = 1
	}
	buf = append(buf, dir)
	buf = binary.LittleEndian.AppendUint64(buf, uint64(d.info.size))
	buf = binary.LittleEndian.AppendUint64(buf, uint64(d.info.mtime.UnixNano()))
	etag := d.info.etag[:min(len(d.info.etag), 1<<16-1)]
	buf = binary.LittleEndian.AppendUint16(buf, uint16(len(etag)))
	buf = append(buf, etag...)
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(d.key)))
	return append(buf, d.key...)
}

// describe records what id names (held until the next add).
func (j *journal) describe(id uint64, d nodeDesc) {
	j.buf = appendDesc(j.buf, id, d)
	j.records++
}

// add records one lookup the kernel is about to get, and writes it out
// before the reply does.
func (j *journal) add(id uint64) {
	j.buf = binary.LittleEndian.AppendUint64(appendRecord(j.buf, recAdd, id), 1)
	j.records++
	j.flush()
}

// forget records n lookups the kernel dropped.
func (j *journal) forget(id, n uint64) {
	j.buf = binary.LittleEndian.AppendUint64(appendRecord(j.buf, recForget, id), n)
	j.records++
	if len(j.buf) >= journalFlushAt {
		j.flush()
	}
}

// flush writes the held records in one write(2): a worker killed during
// it leaves at most a torn last record, which replay drops.
func (j *journal) flush() {
	if j.broken || len(j.buf) == 0 {
		j.buf = j.buf[:0]
		return
	}
	if _, err := j.f.Write(j.buf); err != nil {
		j.fail(err)
	}
	j.buf = j.buf[:0]
}

// fail stops the journal: the mount works on, but a worker replacing
// this one cannot serve ids handed out from now on (ESTALE, EIO).
func (j *journal) fail(err error) {
	if !j.broken {
		j.broken = true
		j.log.Error().Err(err).Str("journal", j.path).
			Msg("fuse: node journal failed; files opened from now on will not survive a worker restart")
	}
}

func (j *journal) wantsCompaction(live int) bool {
	return !j.broken && j.records > compactAfter && j.records > 8*live
}

// compact replaces the file with one holding only live (written to a
// temporary file, then renamed over it).
func (j *journal) compact(live map[uint64]journalEntry) error {
	j.flush()
	tmp := j.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("fuse: node journal: %w", err)
	}
	w := bufio.NewWriterSize(f, 64<<10)
	var rec []byte
	for id, e := range live {
		rec = appendDesc(rec[:0], id, e.desc)
		rec = binary.LittleEndian.AppendUint64(appendRecord(rec, recAdd, id), e.kernel)
		_, _ = w.Write(rec) // the error sticks: Flush reports it
	}
	err = w.Flush()
	if err == nil {
		err = os.Rename(tmp, j.path)
	}
	if err != nil {
		f.Close()
		_ = os.Remove(tmp)
		return fmt.Errorf("fuse: node journal %s: %w", filepath.Base(j.path), err)
	}
	if j.f != nil {
		j.f.Close()
	}
	j.f, j.records = f, 2*len(live)
	return nil
}

func (j *journal) close() {
	j.flush()
	if j.f != nil {
		j.f.Close()
		j.f = nil
		j.broken = true
	}
}
