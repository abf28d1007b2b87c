// Group commit of index writes: concurrent writers share one bbolt
// transaction, so the per-commit cost is paid once per batch, not per
// chunk.
package index

import (
	"encoding/binary"

	bolt "go.etcd.io/bbolt"
)

// maxBatch bounds how many writes share one transaction.
const maxBatch = 256

// writeReq is one queued write: fn applies it inside the shared
// transaction and returns the change in the number of chunk entries.
type writeReq struct {
	fn   func(tx *bolt.Tx) (int64, error)
	done chan error
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
	req := writeReq{fn: fn, done: make(chan error, 1)}
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
// write at once (no added delay); while a commit runs, later writes queue
// and go together in the next one. It exits when Close closes the queue,
// after committing what was queued.
func (d *DB) commitLoop() {
	defer close(d.stopped)
	batch := make([]writeReq, 0, maxBatch)
	for first := range d.writes {
		batch = append(batch[:0], first)
	fill:
		for len(batch) < maxBatch {
			select {
			case r, ok := <-d.writes:
				if !ok {
					break fill
				}
				batch = append(batch, r)
			default:
				break fill
			}
		}
		d.commit(batch)
	}
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
