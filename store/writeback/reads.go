// Reads of single objects: a key with a pending operation is answered from
// it (the staged bytes of a put, ErrNoSuchKey for a delete); any other key
// from the origin.
package writeback

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"sync"

	"github.com/granary-dev/granary/store"
)

// pendingOp returns the operation reads of bucket/key see, if any.
func (l *Log) pendingOp(bucket, key string) *op {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ks := l.keys[objKey{bucket, key}]; ks != nil {
		return ks.latest()
	}
	return nil
}

// servedInfo is o's info as a read returns it (a copy the caller may keep).
func servedInfo(o *op) store.ObjectInfo {
	info := o.Info
	info.User = maps.Clone(info.User)
	info.Tags = maps.Clone(info.Tags)
	return info
}

func (l *Log) Stat(ctx context.Context, bucket, key string) (store.ObjectInfo, error) {
	if o := l.pendingOp(bucket, key); o != nil {
		if o.Kind == kindDelete {
			return store.ObjectInfo{}, noSuchKey(bucket, key)
		}
		return servedInfo(o), nil
	}
	return l.origin.Stat(ctx, bucket, key)
}

var _ store.Staging = (*Log)(nil)

func noSuchKey(bucket, key string) error {
	return fmt.Errorf("writeback: %w: %s/%s (deleted)", store.ErrNoSuchKey, bucket, key)
}

func (l *Log) Get(ctx context.Context, bucket, key string, r store.ReadRange) (io.ReadCloser, store.ObjectInfo, error) {
	rc, info, err, pending := l.getPending(bucket, key, r)
	if !pending {
		return l.origin.Get(ctx, bucket, key, r)
	}
	return rc, info, err
}

// GetStaged is Get from the staged copy only: a key with no pending put
// of version r.ETag gets store.ErrNotFound, never an origin read. It is a
// client's read (a restore of what was just saved): uploads give way to
// it (see yielder).
func (l *Log) GetStaged(bucket, key string, r store.ReadRange) (io.ReadCloser, error) {
	if r.Length != 0 {
		l.restores.touch()
	}
	rc, _, err, pending := l.getPending(bucket, key, r)
	if !pending || errors.Is(err, store.ErrNoSuchKey) || errors.Is(err, store.ErrPreconditionFailed) {
		if rc != nil {
			rc.Close()
		}
		return nil, fmt.Errorf("writeback: %s/%s: %w: no staged copy of version %s", bucket, key, store.ErrNotFound, r.ETag)
	}
	return rc, err
}

// getPending answers a read of bucket/key from its pending operation, and
// reports whether it has one (else nothing is returned).
func (l *Log) getPending(bucket, key string, r store.ReadRange) (io.ReadCloser, store.ObjectInfo, error, bool) {
	if r.Offset < 0 {
		return nil, store.ObjectInfo{}, fmt.Errorf("writeback: negative read offset %d", r.Offset), true
	}
	l.mu.Lock()
	var o *op
	if ks := l.keys[objKey{bucket, key}]; ks != nil {
		o = ks.latest()
	}
	if o == nil {
		l.mu.Unlock()
		return nil, store.ObjectInfo{}, nil, false
	}
	if o.Kind == kindDelete {
		l.mu.Unlock()
		return nil, store.ObjectInfo{}, noSuchKey(bucket, key), true
	}
	info := servedInfo(o)
	if r.ETag != "" && r.ETag != info.ETag {
		l.mu.Unlock()
		return nil, store.ObjectInfo{}, fmt.Errorf("%w: %s/%s has ETag %s, want %s",
			store.ErrPreconditionFailed, bucket, key, info.ETag, r.ETag), true
	}
	if r.Offset > info.Size {
		l.mu.Unlock()
		return nil, store.ObjectInfo{}, fmt.Errorf("writeback: offset %d beyond the end of %s/%s (%d bytes)",
			r.Offset, bucket, key, info.Size), true
	}
	n := info.Size - r.Offset
	if r.Length >= 0 && r.Length < n {
		n = r.Length
	}
	if n == 0 {
		l.mu.Unlock()
		return io.NopCloser(strings.NewReader("")), info, nil, true
	}
	// The reference keeps the staged files until the reader is closed,
	// even if the op lands or is superseded meanwhile.
	o.readers++
	l.mu.Unlock()
	rc, err := o.asm.Open(r.Offset, n)
	if err != nil {
		l.unref(o)
		return nil, store.ObjectInfo{}, fmt.Errorf("writeback: read staged %s/%s: %w", bucket, key, err), true
	}
	return &stagedReader{ReadCloser: rc, l: l, o: o}, info, nil, true
}

// unref drops a reader's reference to o's staged object, removing it if
// o is no longer pending and this was the last reader.
func (l *Log) unref(o *op) {
	l.mu.Lock()
	o.readers--
	remove := o.dropped && o.readers == 0
	l.mu.Unlock()
	if remove {
		l.removeStage(o)
	}
}

// stagedReader reads a staged object and holds a reference to it.
type stagedReader struct {
	io.ReadCloser
	l    *Log
	o    *op
	once sync.Once
}

// NextSection is the staged copy's (store.FileSections): its bytes lie
// in the log's part files.
func (s *stagedReader) NextSection(max int64) (uintptr, int64, int64, error) {
	fs, ok := s.ReadCloser.(store.FileSections)
	if !ok {
		return 0, 0, 0, errors.ErrUnsupported
	}
	return fs.NextSection(max)
}

func (s *stagedReader) Close() error {
	err := s.ReadCloser.Close()
	s.once.Do(func() { s.l.unref(s.o) })
	return err
}
