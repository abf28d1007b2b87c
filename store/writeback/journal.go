// The journal: a bbolt file with one record per operation not yet at the
// origin, keyed by its sequence number. A record is written (and synced)
// before its write is acknowledged and deleted once the origin has it.
package writeback

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/parts"
)

// opsBucket is the bbolt bucket of the records.
var opsBucket = []byte("ops")

// Operation kinds.
const (
	kindPut    = "put"
	kindDelete = "delete"
)

// record is one journaled operation. For a put, StageID names the sealed
// upload of the parts.Store that holds the object's bytes, and Info is
// what reads of the key are answered with until it reaches the origin.
type record struct {
	Seq       uint64
	Kind      string
	Bucket    string
	Key       string
	Info      store.ObjectInfo `json:",omitzero"`
	StageID   string           `json:",omitempty"`
	Multipart bool             `json:",omitempty"`
	Parts     []store.PartInfo `json:",omitempty"`
}

// openJournal opens (creating) the journal file. Commits are synced
// (NoSync is off): a record is on disk when Update returns. The timeout
// turns a journal locked by another process into an error.
func openJournal(path string) (*bbolt.DB, error) {
	db, err := bbolt.Open(path, store.PrivateFileMode, &bbolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("writeback: open journal %s: %w", path, err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(opsBucket)
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("writeback: journal %s: %w", path, err)
	}
	return db, nil
}

func seqKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64(nil, seq)
}

// journalCommit writes add (if not nil) and deletes the records of drop,
// in one synced transaction.
func (l *Log) journalCommit(add *record, drop ...uint64) error {
	var val []byte
	if add != nil {
		var err error
		if val, err = json.Marshal(add); err != nil {
			return fmt.Errorf("writeback: encode record: %w", err)
		}
	}
	err := l.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(opsBucket)
		if add != nil {
			if err := b.Put(seqKey(add.Seq), val); err != nil {
				return err
			}
		}
		for _, seq := range drop {
			if err := b.Delete(seqKey(seq)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("writeback: journal: %w", err)
	}
	return nil
}

// journalDelete deletes the records of seqs.
func (l *Log) journalDelete(seqs ...uint64) error {
	if len(seqs) == 0 {
		return nil
	}
	return l.journalCommit(nil, seqs...)
}

// readJournal returns every record, in sequence order.
func (l *Log) readJournal() ([]record, error) {
	var recs []record
	err := l.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(opsBucket).ForEach(func(k, v []byte) error {
			var r record
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("record %x: %w", k, err)
			}
			if len(k) != 8 || binary.BigEndian.Uint64(k) != r.Seq {
				return fmt.Errorf("record %x holds seq %d", k, r.Seq)
			}
			recs = append(recs, r)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("writeback: read journal: %w", err)
	}
	return recs, nil
}

// replay rebuilds the pending state from the journal: the newest record
// of each key is pending again (older ones were superseded by it and are
// dropped), and sealed stage uploads no record names are removed (a crash
// came between their sealing and their commit: never acknowledged).
func (l *Log) replay() error {
	recs, err := l.readJournal()
	if err != nil {
		return err
	}
	used := make(map[string]bool)
	var superseded []uint64
	for _, r := range recs {
		l.nextSeq = max(l.nextSeq, r.Seq)
		o := &op{record: r, floor: r.Seq}
		if r.Kind == kindPut {
			asm, err := l.storeOf(o).OpenSealed(r.StageID)
			if err != nil {
				// The bytes are gone (removed by hand?): nothing can
				// upload them. Said loudly, and dropped.
				l.log.Error().Err(err).Str("bucket", r.Bucket).Str("key", r.Key).
					Msg("writeback: staged object of a journaled write is missing; dropping the write")
				superseded = append(superseded, r.Seq)
				continue
			}
			o.asm, o.dirty = asm, r.Info.Size
			used[r.StageID] = true
		}
		l.known[r.Bucket] = true // it was, when the write was accepted
		ks := l.keyStateLocked(r.Bucket, r.Key)
		if old := ks.next; old != nil {
			superseded = append(superseded, old.Seq)
			o.floor = old.floor
			l.dirty -= old.dirty
			l.pending--
			if old.asm != nil {
				delete(used, old.StageID)
			}
		}
		ks.next = o
		l.dirty += o.dirty
		l.pending++
		l.lastSeq = r.Seq
	}
	l.nextSeq++
	if err := l.journalDelete(superseded...); err != nil {
		return err
	}
	l.sweep(l.stage, used, false)
	l.sweep(l.puts, used, true)
	for _, ks := range l.keys {
		l.enqueueLocked(ks)
	}
	return nil
}

// sweep removes the sealed uploads of st no record uses, and with
// unsealed, every upload of st that is not sealed (a Put cut short).
func (l *Log) sweep(st *parts.Store, used map[string]bool, unsealed bool) {
	sealed := st.Sealed()
	var gone []string
	for _, id := range sealed {
		if !used[id] {
			gone = append(gone, id)
		}
	}
	if unsealed {
		gone = append(gone, st.Unsealed()...)
	}
	for _, id := range gone {
		if err := st.Remove(id); err != nil && !errors.Is(err, store.ErrNoSuchUpload) {
			l.log.Warn().Err(err).Str("upload", id).Msg("writeback: remove unreferenced staged object")
		}
	}
}
