// The node journal of a supervised mount: an append-only file in the
// supervisor's state directory recording each node id the kernel is
// handed, what it names, and the lookups the kernel gains and drops, so
// that the next worker knows every id the kernel may still hold. A new
// worker reads it whole before it serves (its start is the trainer's
// pause), and it is rewritten in the background once mostly dead.
package fuse

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rs/zerolog"
)

// Record kinds. Every record starts with its kind and a node id.
const (
	recDesc   = 'D' // dir u8, size i64, mtime ns i64, etag (u16 len), key (u32 len)
	recAdd    = '+' // n u64: the kernel gained n lookups
	recForget = '-' // n u64: the kernel dropped n lookups

	recHead  = 9      // kind and id
	descHead = 17 + 2 // dir, size, mtime, etag length
)

// journalFlushAt bounds the forget records held back before a write:
// losing them to a crash only keeps ids alive longer.
const journalFlushAt = 4 << 10

// compactAfter: the journal is rewritten once it holds this many records
// since the last rewrite and 8 times more than live ids (a variable for
// tests).
var compactAfter = 1 << 20

// journal appends records to its file. Its methods are called with the
// node table's lock held, which serializes them.
type journal struct {
	path    string
	f       *os.File
	size    int64 // bytes in f, flushed
	buf     []byte
	records int // since the last rewrite
	log     zerolog.Logger
	broken  bool // a write failed: nothing more is recorded
	// replayed is what the file held when opened, for the table.
	replayed map[uint64]*idEntry
}

// openJournal replays the journal at path. A torn last record (from a
// worker killed mid-write) and what follows it are cut off; a journal
// mostly dead is rewritten with the live ids only.
func openJournal(path string, log zerolog.Logger) (*journal, error) {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("fuse: node journal: %w", err)
	}
	live, good, records := replay(data)
	j := &journal{path: path, log: log, replayed: live}
	if records > 2*len(live)+1024 {
		if err := j.rewrite(live); err != nil {
			return nil, err
		}
		return j, nil
	}
	if j.f, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
		err = j.f.Truncate(int64(good))
	}
	if err != nil {
		return nil, fmt.Errorf("fuse: node journal: %w", err)
	}
	if _, err := j.f.Seek(int64(good), 0); err != nil {
		return nil, fmt.Errorf("fuse: node journal: %w", err)
	}
	j.size, j.records = int64(good), records
	return j, nil
}

// replay parses data: the ids the kernel holds (kernel > 0), where the
// last whole record ends, and how many records there were.
func replay(data []byte) (live map[uint64]*idEntry, good, records int) {
	live = make(map[uint64]*idEntry, len(data)/128)
	for {
		kind, id, d, n, size := parseRecord(data[good:])
		if size == 0 {
			break // the end, or a torn record
		}
		good += size
		records++
		e := live[id]
		if e == nil {
			e = &idEntry{desc: nodeDesc{key: gone}, journaled: true} // no description: kept, never revived
			live[id] = e
		}
		switch kind {
		case recDesc:
			e.desc = d
		case recAdd:
			e.kernel += n
		case recForget:
			e.kernel -= min(n, e.kernel)
		}
	}
	for id, e := range live {
		if e.kernel == 0 {
			delete(live, id)
		}
	}
	return live, good, records
}

// parseRecord parses the record at the start of b: its kind, id, a
// description or a count, and its size (0: none whole).
func parseRecord(b []byte) (kind byte, id uint64, d nodeDesc, n uint64, size int) {
	if len(b) < recHead {
		return
	}
	kind, id = b[0], binary.LittleEndian.Uint64(b[1:])
	switch kind {
	case recAdd, recForget:
		if len(b) < recHead+8 {
			return
		}
		return kind, id, d, binary.LittleEndian.Uint64(b[recHead:]), recHead + 8
	case recDesc:
		if len(b) < recHead+descHead {
			return
		}
		h := b[recHead:]
		d.dir = h[0] == 1
		d.info.size = int64(binary.LittleEndian.Uint64(h[1:]))
		d.info.mtime = time.Unix(0, int64(binary.LittleEndian.Uint64(h[9:])))
		etagEnd := recHead + descHead + int(binary.LittleEndian.Uint16(h[17:]))
		if len(b) < etagEnd+4 {
			return
		}
		keyEnd := etagEnd + 4 + int(binary.LittleEndian.Uint32(b[etagEnd:]))
		if len(b) < keyEnd {
			return
		}
		d.info.etag, d.key = string(b[recHead+descHead:etagEnd]), string(b[etagEnd+4:keyEnd])
		return kind, id, d, 0, keyEnd
	}
	return
}

func appendRecord(buf []byte, kind byte, id uint64) []byte {
	buf = append(buf, kind)
	return binary.LittleEndian.AppendUint64(buf, id)
}

func appendCount(buf []byte, kind byte, id, n uint64) []byte {
	return binary.LittleEndian.AppendUint64(appendRecord(buf, kind, id), n)
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

// add records one lookup the kernel is about to get; the caller flushes
// before the reply leaves.
func (j *journal) add(id uint64) {
	j.buf = appendCount(j.buf, recAdd, id, 1)
	j.records++
}

// forget records n lookups the kernel dropped.
func (j *journal) forget(id, n uint64) {
	j.buf = appendCount(j.buf, recForget, id, n)
	j.records++
	if len(j.buf) >= journalFlushAt {
		j.flush()
	}
}

// flush writes the held records in one write(2): a worker killed during
// it leaves at most a torn last record, which the next replay cuts off.
func (j *journal) flush() {
	if j.broken || len(j.buf) == 0 {
		j.buf = j.buf[:0]
		return
	}
	n, err := j.f.Write(j.buf)
	j.size += int64(n)
	if err != nil {
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

// snapshot writes live to a new file beside the journal and returns its
// name. It runs without the table's lock: live is a copy.
func (j *journal) snapshot(live map[uint64]idEntry) (string, error) {
	tmp := j.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return "", err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 256<<10)
	var rec []byte
	for id, e := range live {
		rec = appendCount(appendDesc(rec[:0], id, e.desc), recAdd, id, e.kernel)
		_, _ = w.Write(rec) // the error sticks: Flush reports it
	}
	if err := w.Flush(); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// swap makes the snapshot at tmp (of snapRecords records), taken when
// the journal was from bytes long, the journal: the records appended
// since follow it, and appends go on there. j.records counts those
// since the snapshot. Called with the table's lock held.
func (j *journal) swap(tmp string, from int64, snapRecords int) error {
	j.flush()
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		var tail *os.File
		if tail, err = os.Open(j.path); err == nil {
			_, err = f.ReadFrom(io.NewSectionReader(tail, from, j.size-from))
			tail.Close()
		}
	}
	// The size is the file's end, not the handle's offset: with no tail
	// appended the offset is still 0 (O_APPEND moves it only on a
	// write), and the next compaction would copy its tail from there.
	var size int64
	if err == nil {
		size, err = f.Seek(0, io.SeekEnd)
	}
	if err == nil {
		err = os.Rename(tmp, j.path)
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		os.Remove(tmp)
		return err
	}
	j.f.Close()
	j.f, j.size = f, size
	j.records = snapRecords + j.records
	return nil
}

// rewrite replaces the file with one holding only live, at once.
func (j *journal) rewrite(live map[uint64]*idEntry) error {
	snap := make(map[uint64]idEntry, len(live))
	for id, e := range live {
		snap[id] = *e
	}
	tmp, err := j.snapshot(snap)
	if err == nil {
		err = os.Rename(tmp, j.path)
	}
	var f *os.File
	if err == nil {
		f, err = os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND, 0)
	}
	if err != nil {
		return fmt.Errorf("fuse: node journal: %w", err)
	}
	size, _ := f.Seek(0, 2)
	j.f, j.size, j.records = f, size, 2*len(live)
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
