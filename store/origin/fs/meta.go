// Sidecar metadata of the directory origin: the ETag and the client's
// metadata of every object written through Granary, kept under
// Root/.granary/meta and trusted only while the data file still has the size
// and mtime the sidecar recorded.
package fs

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"mime"
	"os"
	"path"
	"time"

	"github.com/granary-dev/granary/store"
)

// emptyMD5 is the ETag of a zero-byte object (folder objects).
const emptyMD5 = "d41d8cd98f00b204e9800998ecf8427e"

// sidecar is the JSON record of one object. Size and MTime identify the
// data file it describes: a file with another size or mtime was changed
// behind Granary's back and the sidecar is stale.
type sidecar struct {
	Key                string            `json:"key"`
	Size               int64             `json:"size"`
	MTime              int64             `json:"mtime"` // UnixNano of the data file
	ETag               string            `json:"etag"`
	ContentType        string            `json:"contentType,omitempty"`
	ContentEncoding    string            `json:"contentEncoding,omitempty"`
	ContentDisposition string            `json:"contentDisposition,omitempty"`
	ContentLanguage    string            `json:"contentLanguage,omitempty"`
	CacheControl       string            `json:"cacheControl,omitempty"`
	Expires            string            `json:"expires,omitempty"`
	User               map[string]string `json:"user,omitempty"`
	Tags               map[string]string `json:"tags,omitempty"`
	// Parts are the sizes of the parts an object was completed from, in
	// order; none for an object written whole.
	Parts []int64 `json:"parts,omitempty"`
}

// sidecarPath names the sidecar of bucket/key. Hashing the key keeps every
// key (any length, any characters, "a" and "a/") a flat, valid file name.
func sidecarPath(bucket, key string) string {
	sum := sha256.Sum256([]byte(key))
	h := hex.EncodeToString(sum[:])
	return metaDir + "/" + bucket + "/" + h[:2] + "/" + h
}

// readSidecar returns the sidecar of bucket/key, or nil if there is none
// or it cannot be decoded (a damaged sidecar is as good as none).
func (o *Origin) readSidecar(bucket, key string) *sidecar {
	data, err := o.root.ReadFile(sidecarPath(bucket, key))
	if err != nil {
		return nil
	}
	var sc sidecar
	if json.Unmarshal(data, &sc) != nil || sc.Key != key {
		return nil
	}
	return &sc
}

// matches reports whether sc describes the data file fi.
func (sc *sidecar) matches(fi fs.FileInfo) bool {
	return sc != nil && sc.Size == fi.Size() && sc.MTime == fi.ModTime().UnixNano()
}

// newSidecar records meta for a data file of the given size and mtime.
func newSidecar(key string, size int64, mtime time.Time, etag string, meta store.ObjectMeta) *sidecar {
	meta = meta.Normalized()
	return &sidecar{
		Key: key, Size: size, MTime: mtime.UnixNano(), ETag: etag,
		ContentType:        meta.ContentType,
		ContentEncoding:    meta.ContentEncoding,
		ContentDisposition: meta.ContentDisposition,
		ContentLanguage:    meta.ContentLanguage,
		CacheControl:       meta.CacheControl,
		Expires:            meta.Expires,
		User:               meta.User,
		Tags:               meta.Tags,
	}
}

func (sc *sidecar) meta() store.ObjectMeta {
	return store.ObjectMeta{
		ContentType:        sc.ContentType,
		ContentEncoding:    sc.ContentEncoding,
		ContentDisposition: sc.ContentDisposition,
		ContentLanguage:    sc.ContentLanguage,
		CacheControl:       sc.CacheControl,
		Expires:            sc.Expires,
		User:               maps.Clone(sc.User),
		Tags:               maps.Clone(sc.Tags),
	}
}

// stageSidecar writes sc to a temp file in the staging area and returns
// its name; the caller renames it into place (or removes it).
func (o *Origin) stageSidecar(sc *sidecar) (string, error) {
	data, err := json.Marshal(sc)
	if err != nil {
		return "", fmt.Errorf("fs: encode sidecar: %w", err)
	}
	f, name, err := o.createTemp("meta")
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil && !o.noSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		o.root.Remove(name)
		return "", fmt.Errorf("fs: write sidecar: %w", err)
	}
	return name, nil
}

// publishSidecar renames a staged sidecar to its place for bucket/key.
func (o *Origin) publishSidecar(staged, bucket, key string) error {
	dst := sidecarPath(bucket, key)
	dir := path.Dir(dst)
	if err := o.root.MkdirAll(dir, o.dirPerm); err != nil {
		return fmt.Errorf("fs: sidecar dir: %w", err)
	}
	if err := o.root.Rename(staged, dst); err != nil {
		return fmt.Errorf("fs: publish sidecar: %w", err)
	}
	return o.syncDir(dir)
}

// removeSidecar deletes the sidecar of bucket/key, if any.
func (o *Origin) removeSidecar(bucket, key string) error {
	err := o.root.Remove(sidecarPath(bucket, key))
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("fs: remove sidecar: %w", err)
	}
	return nil
}

// createTemp creates a new, empty file in the staging area.
func (o *Origin) createTemp(kind string) (*os.File, string, error) {
	for range 5 {
		var rnd [12]byte
		rand.Read(rnd[:])
		name := stagingDir + "/" + kind + "-" + hex.EncodeToString(rnd[:])
		f, err := o.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, o.filePerm)
		if err == nil {
			return f, name, nil
		}
		if !os.IsExist(err) {
			return nil, "", fmt.Errorf("fs: create temp file: %w", err)
		}
	}
	return nil, "", fmt.Errorf("fs: create temp file: no free name")
}

// fileInfo builds the info of the data file fi of bucket/key: from its
// sidecar when that still describes the file, else derived from the file.
func (o *Origin) fileInfo(bucket, key string, fi fs.FileInfo, withMeta bool) store.ObjectInfo {
	info := store.ObjectInfo{
		Bucket: bucket, Key: key, Size: fi.Size(), LastModified: fi.ModTime().UTC(),
	}
	if sc := o.readSidecar(bucket, key); sc.matches(fi) {
		info.ETag = sc.ETag
		if withMeta {
			info.ObjectMeta = sc.meta()
		}
		return info
	}
	info.ETag = derivedETag(fi)
	if withMeta {
		info.ContentType = typeByExtension(key)
	}
	return info
}

// derivedETag names the version of a file that has no (valid) sidecar by
// its size and mtime, so a rewritten file gets a new ETag. It is shaped
// like a multipart ETag ("<hex>-1") on purpose: clients that check an
// MD5-shaped ETag against the body skip multipart ones.
func derivedETag(fi fs.FileInfo) string {
	sum := md5.Sum(fmt.Appendf(nil, "%d:%d", fi.Size(), fi.ModTime().UnixNano()))
	return hex.EncodeToString(sum[:]) + "-1"
}

func typeByExtension(key string) string {
	if t := mime.TypeByExtension(path.Ext(key)); t != "" {
		return t
	}
	return store.DefaultContentType
}
