// Restart: reconcile the index with the data files found on disk.
package disk

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/granary-dev/granary/store/index"
)

// recover rebuilds the unit table of an existing cache:
//   - units the index names whose file is gone are dropped from the index;
//   - data files the index does not name (a crash between writing a file
//     and committing its entry, or a discarded index) are removed, and so
//     are leftover temp files;
//   - usage is the sum of the remaining files' sizes (past the high
//     watermark, e.g. after the capacity was lowered, it is evicted down
//     to the low one);
//   - appends go to a new segment (the old ones are read only), and unit
//     numbers continue after the highest one seen;
//   - access times are not persisted: the LRU starts in unit-number order,
//     i.e. oldest written first. Pin verdicts are not persisted either:
//     every unit starts in the LRU list, unjudged (see pin.go).
//   - access counts are not persisted either: every unit starts with a
//     frequency of one access per chunk (see startCounters).
//   - per-bucket bytes are summed from the index, per unit (see
//     quota.go); this reads every entry once.
//
// Entries whose bytes a crash truncated or lost are not looked for here
// (that would read every chunk); the CRC32C check drops them on first read.
// Apart from the per-bucket sums, the cost is one index seek per unit,
// not per chunk.
func (t *Tier) recover() error {
	segs, err := t.scanDir(t.segDir, ".seg")
	if err != nil {
		return err
	}
	files, err := t.scanDir(t.chunkDir, ".chunk")
	if err != nil {
		return err
	}
	referenced, err := t.idx.Units()
	if err != nil {
		return ioErr("list index units", err)
	}
	missing, err := t.adoptUnits(referenced, segs, files)
	if err != nil {
		return err
	}
	dropped, err := t.idx.DropUnits(missing)
	if err != nil {
		return ioErr("drop lost units", err)
	}
	if err := t.loadBucketBytes(); err != nil {
		return err
	}
	orphans := t.removeOrphans(segs, t.segPath) + t.removeOrphans(files, t.chunkPath)
	t.startCounters()
	// The capacity may have shrunk since the last run.
	t.mu.Lock()
	var victims []*unit
	if t.used.Load() > t.highWater() {
		victims, err = t.evictLocked(int64(t.opts.LowWater*float64(t.capacity())), false, false)
	}
	used, live := t.used.Load(), len(t.units)
	t.mu.Unlock()
	t.finishEvictions(victims)
	if err != nil {
		t.log.Error().Err(err).Msg("evicting down to a smaller capacity")
	}
	t.log.Info().Int("units", live).Int64("used_bytes", used).Int64("chunks", t.idx.Count()).
		Int("lost_units", len(missing)).Int("lost_entries", dropped).Int("orphan_files", orphans).
		Msg("disk cache opened")
	return nil
}

// adoptUnits puts every referenced unit that has a file into the table, in
// ascending order so the newest ends up most recently used, and returns
// the referenced units that have none. Found files are deleted from segs
// and files, leaving the orphans.
func (t *Tier) adoptUnits(referenced []uint64, segs, files map[uint64]int64) ([]uint64, error) {
	var missing []uint64
	for _, id := range referenced {
		t.nextUnit = max(t.nextUnit, id+1)
		u := &unit{id: id, refs: 1}
		if size, ok := segs[id]; ok {
			f, err := os.Open(t.segPath(id))
			if err != nil {
				return nil, ioErr("open segment", err)
			}
			u.kind, u.size, u.f = index.InSegment, size, f
			delete(segs, id)
		} else if size, ok := files[id]; ok {
			u.kind, u.size = index.InFile, size
			delete(files, id)
		} else {
			missing = append(missing, id)
			continue
		}
		t.mu.Lock()
		t.units[id] = u
		t.lru.pushFront(u)
		t.used.Add(u.size)
		t.mu.Unlock()
	}
	return missing, nil
}

// startCounters gives every adopted unit its admission counters: chunks
// is the number of live chunks, freq one access each. A chunk file holds
// one chunk; the index does not count entries per unit, so a segment's
// share of the indexed chunks is estimated from its share of the segment
// bytes (dead space makes it an overestimate, at least one).
func (t *Tier) startCounters() {
	t.mu.Lock()
	defer t.mu.Unlock()
	segChunks, segBytes := t.idx.Count(), int64(0)
	for _, u := range t.units {
		if u.kind == index.InSegment {
			segBytes += u.size
		} else {
			segChunks--
		}
	}
	for _, u := range t.units {
		u.chunks = 1
		if u.kind == index.InSegment && segBytes > 0 && segChunks > 0 {
			u.chunks = max(1, (u.size*segChunks+segBytes/2)/segBytes)
		}
		u.freq = u.chunks
	}
}

// removeOrphans deletes the files left in found (unreferenced units) and
// advances the unit counter past them. It returns how many it removed.
func (t *Tier) removeOrphans(found map[uint64]int64, path func(uint64) string) int {
	n := 0
	for id := range found {
		t.nextUnit = max(t.nextUnit, id+1)
		if err := os.Remove(path(id)); err != nil {
			t.log.Warn().Err(err).Str("file", path(id)).Msg("removing an orphan data file")
			continue
		}
		n++
	}
	return n
}

// scanDir returns the unit files in dir named <16 hex digits><ext> with
// their sizes, and removes leftover temp files. Other files are left alone.
func (t *Tier) scanDir(dir, ext string) (map[uint64]int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, ioErr("read "+dir, err)
	}
	found := make(map[uint64]int64)
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, ".tmp") {
			_ = os.Remove(filepath.Join(dir, name))
			continue
		}
		id, ok := parseUnitName(name, ext)
		if !ok || !e.Type().IsRegular() {
			t.log.Debug().Str("file", name).Msg("ignoring a foreign file in the cache directory")
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		found[id] = info.Size()
	}
	return found, nil
}

// parseUnitName parses "<16 hex digits><ext>".
func parseUnitName(name, ext string) (uint64, bool) {
	base, ok := strings.CutSuffix(name, ext)
	if !ok || len(base) != 16 {
		return 0, false
	}
	id, err := strconv.ParseUint(base, 16, 64)
	return id, err == nil
}
