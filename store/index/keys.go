// Key and value encodings of the chunk index: unambiguous, prefix-scannable
// chunk keys and fixed-size location records.
package index

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/granary-dev/granary/store"
)

// ErrMalformed means a stored key or value does not decode.
var ErrMalformed = errors.New("index: malformed entry")

// A chunk key is
//
//	uvarint(len(bucket)) bucket uvarint(len(key)) key uvarint(len(etag)) etag index(8, big endian)
//
// Each string is length-prefixed and a uvarint is prefix-free, so the
// encoding is unambiguous whatever bytes the strings hold ("a" vs "ab",
// bucket "b" key "x/y" vs bucket "b/x" key "y"), and ObjectPrefix(b, k)
// prefixes exactly the keys of object b/k: a scan over it sees every
// version and index of that object and nothing else. All chunks of one
// version are contiguous, ordered by index.

// ObjectPrefix returns the key prefix shared by every chunk of bucket/key.
func ObjectPrefix(bucket, key string) []byte {
	b := make([]byte, 0, 2*binary.MaxVarintLen64+len(bucket)+len(key))
	return appendObject(b, bucket, key)
}

// ChunkKey returns the index key of id.
func ChunkKey(id store.ChunkID) []byte {
	b := make([]byte, 0, 3*binary.MaxVarintLen64+len(id.Bucket)+len(id.Key)+len(id.ETag)+8)
	b = appendObject(b, id.Bucket, id.Key)
	b = appendString(b, id.ETag)
	return binary.BigEndian.AppendUint64(b, uint64(id.Index))
}

// ParseChunkKey decodes a key made by ChunkKey.
func ParseChunkKey(k []byte) (store.ChunkID, error) {
	var id store.ChunkID
	var ok bool
	if id.Bucket, k, ok = readString(k); !ok {
		return id, fmt.Errorf("%w: chunk key bucket", ErrMalformed)
	}
	if id.Key, k, ok = readString(k); !ok {
		return id, fmt.Errorf("%w: chunk key object key", ErrMalformed)
	}
	if id.ETag, k, ok = readString(k); !ok {
		return id, fmt.Errorf("%w: chunk key etag", ErrMalformed)
	}
	if len(k) != 8 {
		return id, fmt.Errorf("%w: chunk key index", ErrMalformed)
	}
	id.Index = int64(binary.BigEndian.Uint64(k))
	return id, nil
}

// etagAfter decodes the ETag that follows an object prefix in a chunk key.
func etagAfter(rest []byte) (string, bool) {
	etag, tail, ok := readString(rest)
	return etag, ok && len(tail) == 8
}

func appendObject(b []byte, bucket, key string) []byte {
	return appendString(appendString(b, bucket), key)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// readString decodes one length-prefixed string from the front of b.
func readString(b []byte) (s string, rest []byte, ok bool) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return "", nil, false
	}
	b = b[w:]
	return string(b[:n]), b[n:], true
}

// Kind says where a chunk's bytes live.
type Kind uint8

// Location kinds.
const (
	// InSegment: Length bytes at Offset of segment file Unit.
	InSegment Kind = 1
	// InFile: the whole of chunk file Unit (Offset is 0).
	InFile Kind = 2
)

// Location says where a chunk's bytes are and what their CRC32C is. Unit
// numbers a segment or chunk file; the disk tier never reuses one.
type Location struct {
	Kind   Kind
	Unit   uint64
	Offset int64
	Length int64
	CRC    uint32 // CRC32C (Castagnoli) of the chunk's bytes
}

// locationVersion leads every encoded Location, so the layout can change.
const locationVersion = 1

// locationSize is the encoded size: version, kind, unit, offset, length, crc.
const locationSize = 1 + 1 + 8 + 8 + 8 + 4

func (l Location) encode() []byte {
	b := make([]byte, 0, locationSize)
	b = append(b, locationVersion, byte(l.Kind))
	b = binary.BigEndian.AppendUint64(b, l.Unit)
	b = binary.BigEndian.AppendUint64(b, uint64(l.Offset))
	b = binary.BigEndian.AppendUint64(b, uint64(l.Length))
	return binary.BigEndian.AppendUint32(b, l.CRC)
}

func decodeLocation(b []byte) (Location, error) {
	if len(b) != locationSize || b[0] != locationVersion {
		return Location{}, fmt.Errorf("%w: location record", ErrMalformed)
	}
	l := Location{
		Kind:   Kind(b[1]),
		Unit:   binary.BigEndian.Uint64(b[2:]),
		Offset: int64(binary.BigEndian.Uint64(b[10:])),
		Length: int64(binary.BigEndian.Uint64(b[18:])),
		CRC:    binary.BigEndian.Uint32(b[26:]),
	}
	if (l.Kind != InSegment && l.Kind != InFile) || l.Offset < 0 || l.Length < 0 {
		return Location{}, fmt.Errorf("%w: location fields", ErrMalformed)
	}
	return l, nil
}

// unitKey is the reverse-index key of a chunk in a unit: the unit number
// (8 bytes, big endian, so a unit's entries are contiguous) then the chunk
// key.
func unitKey(unit uint64, chunkKey []byte) []byte {
	b := make([]byte, 0, 8+len(chunkKey))
	b = binary.BigEndian.AppendUint64(b, unit)
	return append(b, chunkKey...)
}

func unitPrefix(unit uint64) []byte {
	return binary.BigEndian.AppendUint64(nil, unit)
}
