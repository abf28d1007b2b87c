// Group commit of index writes: concurrent writers share one bbolt
// transaction, so the per-commit cost is paid once per batch, not per
// chunk.
package index

import (
	"encoding/binary"
	"time"

	bolt "go.etcd.io/bbolt"
)

// maxBatch bounds how many writes share one transaction.
const maxBatch = 256

// lingerFor is how long a batch of inserts waits for more to share its
// commit: when the batch before it had several writers, or always where
// the index was told its inserters are a pool (Options.Inserters). The
// disk filler's concurrent inserts during a cold pass then pay a commit
// per several chunks rather than one each (a sixth of a node's CPU per
// small miss). Without a pool a writer alone never waits, and any write
// that is not an insert (a removal, a drop) commits the batch at once.
const lingerFor = time.Millisecond

// writeReq is one queued write: fn applies it inside the shared
// transaction and returns the change in the number of chunk entries.
// insert marks a write that may wait up to lingerFor to share a commit.
type writeReq struct {
	fn     func(tx *bolt.Tx) (int64, error)
	done   chan error
	insert bool
}

// update runs fn in a write transaction and returns once it is committed.
// fn returns how many chunk entries it added (negative: removed), which is
// applied to the stored count in the same transaction and to Count once
// committed.
//
// fn may share its transaction with other writers' and, if that batch
// fails, run again alone; so it must derive its results afresh on every
// run (reset what it captures) and must not have effects outside tx.
func (d *DB) update(fn func(tx *bolt.Tx) (int64, error)) error {
	return d.enqueue(writeReq{fn: fn, done: make(chan error, 1)})
}

// insert is update for an insert, which may wait up to lingerFor to share
// its commit with concurrent ones.
func (d *DB) insert(fn func(tx *bolt.Tx) (int64, error)) error {
	return d.enqueue(writeReq{fn: fn, done: make(chan error, 1), insert: true})
}

func (d *DB) enqueue(req writeReq) error {
	d.closeMu.RLock()
	if d.closed {
		d.closeMu.RUnlock()
		return ErrClosed
	}
	d.writes <- req
	d.closeMu.RUnlock()
	return <-req.done
}

// commitLoop is the single committer. With one writer it commits each
// write at once (no added delay) unless the index has a pool of
// inserters; while a commit runs, later writes queue and go together in
// the next one, and a batch of inserts following a batch of several
// writes, or any batch of a pool's inserts, lingers for more (lingerFor).
// It exits when Close closes the queue, after committing what was
// queued.
func (d *DB) commitLoop() {
	defer close(d.stopped)
	batch := make([]writeReq, 0, maxBatch)
	crowded := false // the last batch had more than one write
	for first := range d.writes {
		batch = append(batch[:0], first)
		var linger <-chan time.Time
		if first.insert && (crowded || d.inserters > 1) {
			linger = time.After(d.lingerFor)
			d.lingered.Add(1)
		}
		batch = fillBatch(d.writes, batch, linger, d.enough())
		crowded = len(batch) > 1
		d.commit(batch)
	}
}

// fillBatch adds the queued writes to batch, up to maxBatch. With linger
// set it also waits for new ones until linger fires, a write that is not
// an insert joins, or the batch holds enough writes.
func fillBatch(writes <-chan writeReq, batch []writeReq, linger <-chan time.Time, enough int) []writeReq {
	for len(batch) < maxBatch {
		var r writeReq
		var ok bool
		select {
		case r, ok = <-writes:
		default:
			if linger == nil || len(batch) >= enough {
				return batch
			}
			select {
			case r, ok = <-writes:
			case <-linger:
				return batch
			}
		}
		if !ok {
			return batch
		}
		batch = append(batch, r)
		if !r.insert {
			linger = nil // commit what is queued, now
		}
	}
	return batch
}

// enough is how many writes end a batch's wait: one from each of a pool's
// inserters (none of them can add another before the commit answers it),
// else as many as a batch holds.
func (d *DB) enough() int {
	if d.inserters > 1 {
		return d.inserters
	}
	return maxBatch
}

// commit applies batch in one transaction. If it fails, each write is
// retried alone, so one bad write does not fail the others.
func (d *DB) commit(batch []writeReq) {
	var total int64
	err := d.db.Update(func(tx *bolt.Tx) error {
		total = 0
		for _, r := range batch {
			delta, err := r.fn(tx)
			if err != nil {
				return err
			}
			total += delta
		}
		if total == 0 {
			return nil
		}
		return writeCount(tx, readCount(tx)+total)
	})
	if err != nil && len(batch) > 1 {
		for _, r := range batch {
			d.commit([]writeReq{r})
		}
		return
	}
	if err == nil {
		d.count.Add(total)
	}
	for _, r := range batch {
		r.done <- d.wrap(err)
	}
}

func readCount(tx *bolt.Tx) int64 {
	v := tx.Bucket(bucketMeta).Get(keyCount)
	if len(v) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v))
}

func writeCount(tx *bolt.Tx, n int64) error {
	return tx.Bucket(bucketMeta).Put(keyCount, binary.BigEndian.AppendUint64(nil, uint64(max(n, 0))))
}
