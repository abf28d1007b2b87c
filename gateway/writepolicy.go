// The write policy: what each bucket does with writes (read-only,
// write-through, write-back), whether a write is at the origin yet, and
// which written versions members must learn from this node.
package gateway

import (
	"errors"
	"fmt"

	"github.com/granary-dev/granary/store"
)

// WriteMode says what a bucket does with writes.
type WriteMode string

const (
	// ReadOnly refuses every write (PUT, copy, multipart, DELETE).
	ReadOnly WriteMode = "read-only"
	// WriteThrough acknowledges a write once the origin accepted it.
	WriteThrough WriteMode = "write-through"
	// WriteBack acknowledges a write once it is durable on local disk; the
	// origin (a write-back log, see store/writeback) uploads it later.
	WriteBack WriteMode = "write-back"
)

// ParseWriteMode returns the mode s names ("" is WriteThrough).
func ParseWriteMode(s string) (WriteMode, error) {
	switch m := WriteMode(s); m {
	case "":
		return WriteThrough, nil
	case ReadOnly, WriteThrough, WriteBack:
		return m, nil
	}
	return "", fmt.Errorf("gateway: unknown write mode %q (want read-only, write-through or write-back)", s)
}

// ErrReadOnly means a write to a bucket in read-only mode.
var ErrReadOnly = errors.New("gateway: bucket is read-only")

// writeMode returns the bucket's write rule.
func (e *Engine) writeMode(bucket string) WriteMode {
	if m, ok := e.opts.WriteModes[bucket]; ok {
		return m
	}
	return e.opts.WriteMode
}

// WriteMode returns the write rule of bucket.
func (e *Engine) WriteMode(bucket string) WriteMode { return e.writeMode(bucket) }

// writable fails with ErrReadOnly for a read-only bucket.
func (e *Engine) writable(bucket string) error {
	if e.writeMode(bucket) == ReadOnly {
		return ErrReadOnly
	}
	return nil
}

// Persisted reports whether bucket/key has no write waiting for the
// origin. Without a write-back log every write is persisted when acked.
func (e *Engine) Persisted(bucket, key string) bool {
	if e.opts.Staging != nil {
		return e.opts.Staging.Persisted(bucket, key)
	}
	return true
}

// writtenHere is info if members should learn it from this node, else
// nil: a write-back object the origin may not have yet, or a write-through
// object whose local copy (teed) fills the cache, which members read from
// this node, not the origin, until its chunks are on their owners.
func (e *Engine) writtenHere(info store.ObjectInfo, teed bool) *store.ObjectInfo {
	if info.ETag == "" {
		return nil
	}
	if mode := e.writeMode(info.Bucket); mode == WriteBack || (mode == WriteThrough && teed) {
		return &info
	}
	return nil
}
