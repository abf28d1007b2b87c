// Encoding of catalog entries and coverage records, and key-range helpers.
package catalog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/granary-dev/granary/store"
)

// errLoad reports a listing that breaks Load's contract (order, prefix).
var errLoad = errors.New("catalog: bad listing")

// Entry value layout: flags byte, uvarint size, and unless flagNoTime,
// varint Unix seconds and uvarint nanoseconds; then the ETag's bytes.
const (
	flagNoTime = 1 << 0
)

// encodeEntry returns e's value (its key is the bbolt key).
func encodeEntry(e Entry) []byte {
	buf := make([]byte, 0, 1+3*binary.MaxVarintLen64+len(e.ETag))
	var flags byte
	if e.LastModified.IsZero() {
		flags |= flagNoTime
	}
	buf = append(buf, flags)
	buf = binary.AppendUvarint(buf, uint64(e.Size))
	if flags&flagNoTime == 0 {
		buf = binary.AppendVarint(buf, e.LastModified.Unix())
		buf = binary.AppendUvarint(buf, uint64(e.LastModified.Nanosecond()))
	}
	return append(buf, e.ETag...)
}

// decodeEntry parses a value written by encodeEntry; key is copied.
func decodeEntry(key, v []byte) (Entry, error) {
	e := Entry{Key: string(key)}
	if len(v) < 1 {
		return e, fmt.Errorf("%w: empty entry for %q", ErrCorrupt, key)
	}
	flags, p := v[0], v[1:]
	size, n := binary.Uvarint(p)
	if n <= 0 {
		return e, fmt.Errorf("%w: bad size for %q", ErrCorrupt, key)
	}
	e.Size, p = int64(size), p[n:]
	if flags&flagNoTime == 0 {
		sec, n := binary.Varint(p)
		if n <= 0 {
			return e, fmt.Errorf("%w: bad time for %q", ErrCorrupt, key)
		}
		nsec, m := binary.Uvarint(p[n:])
		if m <= 0 || nsec >= 1e9 {
			return e, fmt.Errorf("%w: bad time for %q", ErrCorrupt, key)
		}
		e.LastModified, p = time.Unix(sec, int64(nsec)).UTC(), p[n+m:]
	}
	e.ETag = string(p)
	return e, nil
}

// sameEntry reports whether a and b would encode alike.
func sameEntry(a, b Entry) bool {
	return a.Key == b.Key && a.Size == b.Size && a.ETag == b.ETag && a.LastModified.Equal(b.LastModified)
}

// checkKey rejects keys bbolt cannot hold.
func checkKey(key string) error {
	if key == "" || len(key) > bolt.MaxKeySize {
		return fmt.Errorf("%w: %d-byte key", store.ErrInvalidKey, len(key))
	}
	return nil
}

// checkBucket rejects bucket names that cannot be a nested bucket or a
// coverage key ("\x00" separates bucket and prefix there).
func checkBucket(bucket string) error {
	if bucket == "" || len(bucket) > 255 || strings.IndexByte(bucket, 0) >= 0 {
		return fmt.Errorf("%w: %q", store.ErrInvalidBucketName, bucket)
	}
	return nil
}

// coverKey is the coverage record's key of bucket/prefix.
func coverKey(bucket, prefix string) []byte {
	return []byte(bucket + "\x00" + prefix)
}

// splitCoverKey undoes coverKey.
func splitCoverKey(k []byte) (bucket, prefix string, ok bool) {
	bucket, prefix, ok = strings.Cut(string(k), "\x00")
	return
}

func encodeTime(t time.Time) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(t.UnixNano()))
}

func decodeTime(v []byte) (time.Time, error) {
	if len(v) != 8 {
		return time.Time{}, fmt.Errorf("%w: coverage time of %d bytes", ErrCorrupt, len(v))
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC(), nil
}

// prefixEnd returns the smallest key greater than every key that starts
// with p, or nil if there is none (p is empty or all 0xff).
func prefixEnd(p []byte) []byte {
	end := []byte(string(p))
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// seekAfter positions c on the first key strictly greater than k.
func seekAfter(c *bolt.Cursor, k []byte) (key, val []byte) {
	key, val = c.Seek(k)
	if key != nil && string(key) == string(k) {
		key, val = c.Next()
	}
	return key, val
}
