// Disk hits sent from their file: a read of one chunk that RAM does not
// hold and would not keep, by a caller that sends bodies from files
// (GetOptions.FileFrom), gets the chunk where the disk tier holds it
// (store.FileLender), unread, for the kernel to send by reference, as
// nginx sends its cache files. A chunk RAM would keep is read and put
// there, as before: RAM's hits are sent from its own file.
package gateway

import (
	"io"

	"github.com/granary-dev/granary/store"
)

// fileBody is an object's body lent where it lies in a file: n bytes
// from off in a chunk. Read reads them from the file; Close ends the
// lease.
type fileBody struct {
	chunk store.FileChunk
	off   int64
	n     int64
	read  int64
}

func (f *fileBody) Read(p []byte) (int, error) {
	if f.read >= f.n {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), f.n-f.read)]
	n, err := f.chunk.ReadAt(p, f.off+f.read)
	f.read += int64(n)
	if err == io.EOF && f.read < f.n {
		err = io.ErrUnexpectedEOF
	} else if err == io.EOF {
		err = nil
	}
	return n, err
}

func (f *fileBody) Close() error {
	f.chunk.Release()
	return nil
}

// diskFile returns the n bytes from within of w's chunk lent from the
// disk tier's file, or nil: the caller takes no file that large (from),
// the tier cannot lend the chunk unread, or RAM would keep it.
func (e *Engine) diskFile(w *walker, within, n, from int64) *fileBody {
	fl, ok := e.opts.Disk.(store.FileLender)
	if !ok || from <= 0 || n < from || !e.ramDeclines(w.id, w.n) {
		return nil
	}
	// Asked only if lent: else the reader asks the disk tier as its
	// first ask, which the tier has not counted.
	chunk, size, err := fl.LendFile(w.id, w.plan.records && w.asked&askedDisk == 0)
	if err != nil {
		return nil
	}
	w.asked |= askedDisk
	if size != w.n {
		chunk.Release()
		return nil
	}
	e.countHit(w.id.Bucket, hitDisk, int(n), w.plan.client)
	return &fileBody{chunk: chunk, off: within, n: n}
}

// ramDeclines reports whether RAM (if any) would not keep chunk id of n
// bytes now; a tier that cannot say is taken to keep it.
func (e *Engine) ramDeclines(id store.ChunkID, n int64) bool {
	if e.opts.RAM == nil {
		return true
	}
	a, ok := e.opts.RAM.(store.AdmitChecker)
	return ok && !a.WouldAdmit(id, int(n))
}
