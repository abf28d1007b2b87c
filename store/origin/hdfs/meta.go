// Object identity and metadata of the HDFS origin: the version ETag
// derived from a file's status, and the extended attribute that carries
// what HDFS cannot (S3 metadata, a multipart ETag).
package hdfs

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash"
	"os"
	"time"

	"github.com/granary-dev/granary/store"
)

// metaXAttr is the extended attribute holding a record as JSON.
const metaXAttr = "user.granary.meta"

// versionETag is the ETag of a file version: the hex of the first 16 bytes
// of SHA-256 over its size, mtime in nanoseconds and file ID (0 when the
// namenode reports none). A rewrite (a new file, so a new ID) or an append
// (a new size and mtime) is a new version; without file IDs, a rewrite of
// equal size within one mtime tick (1 ms on HDFS) is not detected.
func versionETag(size int64, mtime time.Time, fileID uint64) string {
	var b [24]byte
	binary.BigEndian.PutUint64(b[0:], uint64(size))
	binary.BigEndian.PutUint64(b[8:], uint64(mtime.UnixNano()))
	binary.BigEndian.PutUint64(b[16:], fileID)
	sum := sha256.Sum256(b[:])
	return hex.EncodeToString(sum[:16])
}

// fileID returns the HDFS file ID of a status the client returned, or 0.
// The client's Sys() is its (internal) status proto, which has GetFileId.
func fileID(fi os.FileInfo) uint64 {
	if s, ok := fi.Sys().(interface{ GetFileId() uint64 }); ok {
		return s.GetFileId()
	}
	return 0
}

// fileETag is the version ETag of fi.
func fileETag(fi os.FileInfo) string { return versionETag(fi.Size(), fi.ModTime(), fileID(fi)) }

// record is the content of metaXAttr. ETag, when set, replaces the
// version ETag, but only while the file is still the version Version names
// (so a file changed at the origin falls back to its own version ETag).
type record struct {
	Meta    store.ObjectMeta `json:"meta"`
	ETag    string           `json:"etag,omitempty"`
	Version string           `json:"version,omitempty"`
	// Parts are the sizes of the parts the file was completed from, valid
	// with ETag (while the file is still Version).
	Parts []int64 `json:"parts,omitempty"`
	// sum, if set, hashes the body as it is staged; its MD5 becomes
	// ETag (an S3 client's ETag for a whole-object PUT).
	sum hash.Hash
}

// parseRecord decodes an xattr value; a value it cannot read is ignored.
func parseRecord(v string) *record {
	var r record
	if v == "" || json.Unmarshal([]byte(v), &r) != nil {
		return nil
	}
	return &r
}

// objectInfo builds the info of bucket/key from its file status and its
// record (nil: none).
func objectInfo(bucket, key string, fi os.FileInfo, r *record) store.ObjectInfo {
	info := store.ObjectInfo{
		Bucket: bucket, Key: key, Size: fi.Size(), ETag: fileETag(fi),
		LastModified: fi.ModTime().UTC(),
	}
	var meta store.ObjectMeta
	if r != nil {
		meta = r.Meta
		if r.ETag != "" && r.Version == info.ETag {
			info.ETag = r.ETag
		}
	}
	info.ObjectMeta = meta.Normalized()
	return info
}

// isDefaultMeta reports whether meta needs no record.
func isDefaultMeta(meta store.ObjectMeta) bool {
	m := meta.Normalized()
	return m.ContentType == store.DefaultContentType && m.ContentEncoding == "" &&
		m.ContentDisposition == "" && m.ContentLanguage == "" && m.CacheControl == "" &&
		m.Expires == "" && len(m.User) == 0 && len(m.Tags) == 0
}

// readRecord returns the record of the file at p, or nil if it has none or
// the namenode keeps no xattrs.
func (o *Origin) readRecord(p string) (*record, error) {
	if o.noXAttrs.Load() {
		return nil, nil
	}
	attrs, err := o.cl().ListXAttrs(p)
	if err != nil {
		if isUnsupported(err) {
			o.disableXAttrs(err)
			return nil, nil
		}
		return nil, err
	}
	return parseRecord(attrs[metaXAttr]), nil
}

// writeRecord stores r on the file at p. A namenode without xattrs makes
// it a no-op (logged once): the object keeps its bytes, not its metadata.
func (o *Origin) writeRecord(p string, r *record) error {
	if o.noXAttrs.Load() {
		return nil
	}
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := o.cl().SetXAttr(p, metaXAttr, string(v)); err != nil {
		if isUnsupported(err) {
			o.disableXAttrs(err)
			return nil
		}
		return err
	}
	return nil
}

// disableXAttrs records that the namenode has no xattrs.
func (o *Origin) disableXAttrs(err error) {
	if o.noXAttrs.CompareAndSwap(false, true) {
		o.log.Warn().Err(err).Msg("hdfs: namenode does not support extended attributes; object metadata will not be kept")
	}
}
