// Parts of an upload: PutPart streams a body to a temp file and commits it
// (data file renamed into place, then its info), ListParts pages the
// committed ones.
package parts

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/internal/xfer"
)

const defaultMaxList = 1000

// PutPart stores part number of the upload from exactly size bytes of
// body (ErrIncompleteBody if it ends early), as store.Multipart.PutPart.
// A size < 0 takes the body to its end. A part larger than
// store.MaxPartSize fails with an error wrapping store.ErrTooLarge. The
// body is read without holding the upload's lock; the commit waits for it
// (so for an open Assembly).
func (s *Store) PutPart(ctx context.Context, bucket, key, id string, number int, body io.Reader, size int64) (store.PartInfo, error) {
	return s.putPart(ctx, bucket, key, id, number, body, size, nil)
}

// PutPartNamed stores part number of the upload from exactly size bytes
// of body, as PutPart does, without hashing them: once the body is kept,
// name gives the part's ETag (ok false: drop it). A tee takes a part so,
// named by the ETag the origin answered for the same bytes (empty for a
// single PUT's one part: see AssembleWhole). The MD5 it no longer
// computes was a quarter of what a node spent on a checkpoint saved
// through it.
func (s *Store) PutPartNamed(ctx context.Context, bucket, key, id string, number int, body io.Reader, size int64, name func() (etag string, ok bool)) error {
	_, err := s.putPart(ctx, bucket, key, id, number, body, size, name)
	return err
}

// errUnnamed drops a part whose name was refused.
var errUnnamed = errors.New("parts: the part was not named")

// putPart is PutPart, with the part's ETag from name if it is not nil
// (else its MD5).
func (s *Store) putPart(ctx context.Context, bucket, key, id string, number int, body io.Reader, size int64, name func() (string, bool)) (store.PartInfo, error) {
	if err := partNumberOK(number); err != nil {
		return store.PartInfo{}, err
	}
	if size > store.MaxPartSize {
		return store.PartInfo{}, fmt.Errorf("%w: part of %d bytes, the most is %d", store.ErrTooLarge, size, int64(store.MaxPartSize))
	}
	if err := ctx.Err(); err != nil {
		return store.PartInfo{}, err
	}
	u, err := s.lookupOpen(bucket, key, id)
	if err != nil {
		return store.PartInfo{}, err
	}
	dir := s.path(id)
	tmp, etag, n, err := s.receive(ctx, dir, body, size, name == nil)
	if err == nil && name != nil {
		var ok bool
		if etag, ok = name(); !ok {
			os.Remove(tmp)
			err = errUnnamed
		}
		etag = trimETag(etag)
	}
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			err = noSuchUpload(id) // removed while we started
		}
		return store.PartInfo{}, err
	}
	defer os.Remove(tmp) // no-op once renamed
	rec := partRec{Number: number, File: dataName(number), ETag: etag, Size: n, MTime: time.Now().UnixNano()}
	if err := s.commitPart(ctx, u, tmp, rec); err != nil {
		return store.PartInfo{}, err
	}
	return rec.info(), nil
}

// receive copies size bytes of body (all of it when size < 0) to a new
// temp file in dir, fsynced unless NoSync, and returns its name, the hex
// MD5 (empty unless hashed) and the byte count. On error no temp file
// remains.
func (s *Store) receive(ctx context.Context, dir string, body io.Reader, size int64, hashed bool) (string, string, int64, error) {
	tmp := filepath.Join(dir, tmpPrefix+randHex(12))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	if err != nil {
		return "", "", 0, fmt.Errorf("parts: temp file: %w", err)
	}
	var w io.Writer = f
	var h hash.Hash
	if hashed {
		h = md5.New()
		w = io.MultiWriter(f, h)
	}
	n, err := xfer.Copy(ctx, w, body, size, store.MaxPartSize)
	if err != nil {
		err = fmt.Errorf("parts: %w", err)
	}
	if err == nil && !s.noSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", "", 0, err
	}
	if !hashed {
		return tmp, "", n, nil
	}
	return tmp, hex.EncodeToString(h.Sum(nil)), n, nil
}

// commitPart makes the received temp file part rec.Number of u, under u's
// lock: data renamed into place and made durable, then the info renamed
// over the old one (the commit point), then the old data file deleted.
func (s *Store) commitPart(ctx context.Context, u *upload, tmp string, rec partRec) error {
	if err := u.acquire(ctx); err != nil {
		return err
	}
	defer u.release()
	s.mu.Lock()
	ok := u.open()
	old, hadOld := u.parts[rec.Number]
	s.mu.Unlock()
	if !ok {
		return noSuchUpload(u.id)
	}
	dir := s.path(u.id)
	if err := os.Rename(tmp, filepath.Join(dir, rec.File)); err != nil {
		return fmt.Errorf("parts: place part %d: %w", rec.Number, err)
	}
	infoTmp := filepath.Join(dir, tmpPrefix+randHex(12))
	err := s.syncDir(dir)
	if err == nil {
		err = s.writeFile(infoTmp, rec)
	}
	if err == nil {
		err = os.Rename(infoTmp, filepath.Join(dir, infoName(rec.Number)))
	}
	if err != nil {
		os.Remove(infoTmp)
		os.Remove(filepath.Join(dir, rec.File))
		return fmt.Errorf("parts: commit part %d: %w", rec.Number, err)
	}
	// Committed: the info names the new data file. The old data file goes
	// only once that is durable, so a crash keeps one of the two parts.
	s.mu.Lock()
	u.parts[rec.Number] = rec
	s.mu.Unlock()
	if err := s.syncDir(dir); err != nil {
		return fmt.Errorf("parts: commit part %d: %w", rec.Number, err)
	}
	if hadOld {
		os.Remove(filepath.Join(dir, old.File))
	}
	return nil
}

// ListParts lists the upload's parts as store.Multipart.ListParts.
func (s *Store) ListParts(bucket, key, id string, opts store.PartListOptions) (store.PartPage, error) {
	s.mu.Lock()
	u := s.uploads[id]
	if s.closed {
		s.mu.Unlock()
		return store.PartPage{}, errClosed
	}
	if u == nil || u.bucket != bucket || u.key != key || !u.open() {
		s.mu.Unlock()
		return store.PartPage{}, noSuchUpload(id)
	}
	recs := make([]partRec, 0, len(u.parts))
	for n, p := range u.parts {
		if n > opts.After {
			recs = append(recs, p)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(recs, func(a, b partRec) int { return a.Number - b.Number })
	limit := opts.MaxParts
	if limit <= 0 {
		limit = defaultMaxList
	}
	var page store.PartPage
	for _, p := range recs {
		if len(page.Parts) == limit {
			page.IsTruncated = true
			page.NextAfter = page.Parts[len(page.Parts)-1].Number
			break
		}
		page.Parts = append(page.Parts, p.info())
	}
	return page, nil
}
