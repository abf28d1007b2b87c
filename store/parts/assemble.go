// Completions: Assemble checks a completion against the upload's parts and
// returns an Assembly, which holds the upload's lock until the caller
// closes, removes or seals it, and reads the joined parts.
package parts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/granary-dev/granary/store"
)

// Assemble validates a completion of the upload (store.CheckCompletion,
// then every listed part present with that ETag, every part but the last
// at least store.MinPartSize) and returns the joined parts. The upload
// stays open, and is locked against PutPart, Abort and another Assemble
// until the Assembly is closed, removed or sealed (they wait for it).
func (s *Store) Assemble(bucket, key, id string, parts []store.CompletePart) (*Assembly, error) {
	if err := store.CheckCompletion(parts); err != nil {
		return nil, err
	}
	u, err := s.lockOpen(context.Background(), bucket, key, id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	recs, err := completion(u.parts, parts)
	s.mu.Unlock()
	var etag string
	if err == nil {
		etags := make([]string, len(recs))
		for i, p := range recs {
			etags[i] = p.ETag
		}
		etag, err = store.MultipartETag(etags)
	}
	if err != nil {
		u.release()
		return nil, err
	}
	return s.newAssembly(u, recs, etag, stateLocked), nil
}

// AssembleWhole returns part 1 of the upload as the whole object, locked
// as Assemble's are; its ETag is empty (a single PUT's tee, named so by
// PutPartNamed). It fails with store.ErrInvalidPart if there is no part 1.
func (s *Store) AssembleWhole(bucket, key, id string) (*Assembly, error) {
	u, err := s.lockOpen(context.Background(), bucket, key, id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	p, ok := u.parts[1]
	s.mu.Unlock()
	if !ok {
		u.release()
		return nil, fmt.Errorf("%w: part 1 was not uploaded", store.ErrInvalidPart)
	}
	return s.newAssembly(u, []partRec{p}, "", stateLocked), nil
}

// completion returns the records of the listed parts, or why they do not
// make a completion.
func completion(have map[int]partRec, parts []store.CompletePart) ([]partRec, error) {
	recs := make([]partRec, len(parts))
	for i, cp := range parts {
		p, ok := have[cp.Number]
		if !ok {
			return nil, fmt.Errorf("%w: part %d was not uploaded", store.ErrInvalidPart, cp.Number)
		}
		if trimETag(cp.ETag) != p.ETag {
			return nil, fmt.Errorf("%w: part %d has ETag %s, not %s", store.ErrInvalidPart, cp.Number, p.ETag, cp.ETag)
		}
		if i < len(parts)-1 && p.Size < store.MinPartSize {
			return nil, fmt.Errorf("%w: part %d has %d bytes", store.ErrEntityTooSmall, cp.Number, p.Size)
		}
		recs[i] = p
	}
	return recs, nil
}

// Assembly states.
const (
	stateLocked  = iota // from Assemble: holds the upload's lock
	stateSealed         // sealed: readable until removed
	stateClosed         // closed: the upload is open again, not readable here
	stateRemoved        // removed: nothing left
)

// Assembly is a validated completion: the listed parts, in order.
type Assembly struct {
	Bucket, Key, UploadID string
	Meta                  store.ObjectMeta
	Parts                 []store.PartInfo // the listed parts, in order
	Size                  int64            // sum of the parts' sizes
	ETag                  string           // store.MultipartETag of the parts

	s     *Store
	u     *upload
	recs  []partRec // the parts' records (their data files), in order
	mu    sync.Mutex
	state int // guarded by mu
}

// newAssembly builds the Assembly of recs of u.
func (s *Store) newAssembly(u *upload, recs []partRec, etag string, state int) *Assembly {
	a := &Assembly{
		Bucket: u.bucket, Key: u.key, UploadID: u.id, Meta: u.meta, ETag: etag,
		s: s, u: u, recs: recs, state: state,
	}
	for _, p := range recs {
		a.Parts = append(a.Parts, p.info())
		a.Size += p.Size
	}
	return a
}

var errDone = errors.New("parts: assembly closed or removed")

// Open returns a reader of n bytes of the joined parts from offset off
// (n < 0, or beyond the end: to the end), reading the part files as it
// goes. It fails once the Assembly is closed or removed.
func (a *Assembly) Open(off, n int64) (io.ReadCloser, error) {
	a.mu.Lock()
	state := a.state
	a.mu.Unlock()
	a.s.mu.Lock()
	removed := a.u.removed
	a.s.mu.Unlock()
	if state == stateClosed || state == stateRemoved || removed {
		return nil, errDone
	}
	if off < 0 || off > a.Size {
		return nil, fmt.Errorf("parts: offset %d outside the %d bytes of upload %s", off, a.Size, a.UploadID)
	}
	if n < 0 || n > a.Size-off {
		n = a.Size - off
	}
	r := &joinReader{dir: a.s.path(a.UploadID), recs: a.recs, remain: n}
	// Find the part holding off.
	for r.idx < len(r.recs) && off >= r.recs[r.idx].Size {
		off -= r.recs[r.idx].Size
		r.idx++
	}
	r.off = off
	return r, nil
}

// Seal makes the upload a completed one: no longer listed, no longer open
// to PutPart, Abort or Assemble (ErrNoSuchUpload), its files kept until
// Remove. It is durable when it returns (unless NoSync). Part files the
// completion does not list are deleted.
func (a *Assembly) Seal() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.state == stateSealed {
		return nil
	}
	if a.state != stateLocked {
		return errDone
	}
	s, u := a.s, a.u
	dir := s.path(u.id)
	seal := &sealRec{ETag: a.ETag, Parts: a.recs}
	if err := s.replaceFile(dir, sealName, seal); err != nil {
		return fmt.Errorf("parts: seal upload %s: %w", u.id, err)
	}
	s.mu.Lock()
	u.sealed = seal
	unlisted := u.parts
	u.parts = nil
	s.mu.Unlock()
	listed := make(map[int]bool, len(a.recs))
	for _, p := range a.recs {
		listed[p.Number] = true
	}
	for n, p := range unlisted {
		os.Remove(filepath.Join(dir, infoName(n)))
		if !listed[n] {
			os.Remove(filepath.Join(dir, p.File))
		}
	}
	a.state = stateSealed
	u.release()
	return nil
}

// Remove deletes the upload and its files (the completion is done).
// Removing an upload already removed (by Store.Remove) is not an error. If
// it fails, the upload is left open and unlocked, as by Close.
func (a *Assembly) Remove() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch a.state {
	case stateRemoved:
		return nil
	case stateClosed:
		return errDone
	case stateSealed:
		if err := a.u.acquire(context.Background()); err != nil {
			return err
		}
	}
	defer a.u.release()
	a.s.mu.Lock()
	gone := a.u.removed
	a.s.mu.Unlock()
	if !gone {
		if err := a.s.removeLocked(a.u); err != nil {
			if a.state == stateLocked {
				a.state = stateClosed
			}
			return err
		}
	}
	a.state = stateRemoved
	return nil
}

// Close unlocks the upload, leaving it open (the completion failed).
// Closing a sealed or removed Assembly does nothing.
func (a *Assembly) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.state == stateLocked {
		a.state = stateClosed
		a.u.release()
	}
	return nil
}

// joinReader reads remain bytes of the concatenated data files of recs,
// starting off bytes into recs[idx]; it opens one file at a time.
type joinReader struct {
	dir    string
	recs   []partRec
	idx    int
	off    int64
	remain int64
	cur    *os.File // the open file of recs[idx], or nil
	err    error    // sticky
}

func (r *joinReader) Read(p []byte) (int, error) {
	if err := r.locate(); err != nil {
		return 0, err
	}
	p = p[:min(int64(len(p)), r.remain, r.recs[r.idx].Size-r.off)]
	n, err := r.cur.ReadAt(p, r.off)
	r.off += int64(n)
	r.remain -= int64(n)
	if n < len(p) {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF // the part file shrank
		}
		r.err = fmt.Errorf("parts: read part %d: %w", r.recs[r.idx].Number, err)
		return n, r.err
	}
	return n, nil
}

// NextSection returns where the reader's next bytes lie, at most max of
// them, and moves past them (store.FileSections). A part file that
// shrank shows when they are sent: sendfile ends early.
func (r *joinReader) NextSection(max int64) (uintptr, int64, int64, error) {
	if err := r.locate(); err != nil {
		return 0, 0, 0, err
	}
	off, n := r.off, min(max, r.remain, r.recs[r.idx].Size-r.off)
	r.off += n
	r.remain -= n
	return r.cur.Fd(), off, n, nil
}

var _ store.FileSections = (*joinReader)(nil)

// locate opens the part file that holds the reader's next byte, if it is
// not open yet, skipping parts that have ended; io.EOF when no bytes are
// left to read.
func (r *joinReader) locate() error {
	if r.err != nil {
		return r.err
	}
	if r.remain <= 0 {
		return io.EOF
	}
	for r.off >= r.recs[r.idx].Size { // an empty part, or the end of one
		r.next()
		if r.idx == len(r.recs) { // cannot be: remain <= the bytes left
			r.err = io.ErrUnexpectedEOF
			return r.err
		}
	}
	if r.cur == nil {
		f, err := os.Open(filepath.Join(r.dir, r.recs[r.idx].File))
		if err != nil {
			r.err = fmt.Errorf("parts: open part %d: %w", r.recs[r.idx].Number, err)
			return r.err
		}
		r.cur = f
	}
	return nil
}

// next moves to the start of the following part, closing the current one.
func (r *joinReader) next() {
	if r.cur != nil {
		r.cur.Close()
		r.cur = nil
	}
	r.idx++
	r.off = 0
}

func (r *joinReader) Close() error {
	if r.cur != nil {
		r.cur.Close()
		r.cur = nil
	}
	r.err = errDone
	return nil
}
