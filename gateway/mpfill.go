// Write-through multipart uploads fill the cache on the way: each part is
// copied to a local tee (a store.PartTee) while it streams to
// the origin. Once the origin has completed the object, a filler cuts its
// chunks from the tee into the tiers; until it is done, a chunk miss of
// that object reads the tee rather than the origin. So the first restore
// of a checkpoint written through Granary is a hit, not a download.
package gateway

import (
	"context"
	"io"
	"strconv"
	"sync"

	"github.com/granary-dev/granary/store"
)

// version names one version of an object.
type version struct{ bucket, key, etag string }

// tees holds the local copies of write-through uploads.
type tees struct {
	store store.PartTee
	ctx   context.Context // ends tee writes at close
	stop  context.CancelFunc

	mu      sync.Mutex                  // guards ids and sources
	ids     map[string]string           // origin upload ID -> tee upload ID
	sources map[version]store.Assembled // completed objects being filled
}

// newTees keeps tees in st, opened empty (tees of earlier runs shadowed
// uploads unknown to this process).
func newTees(st store.PartTee) *tees {
	ctx, stop := context.WithCancel(context.Background())
	return &tees{store: st, ctx: ctx, stop: stop, ids: map[string]string{}, sources: map[version]store.Assembled{}}
}

func (t *tees) close() error {
	t.stop()
	return t.store.Close()
}

// teeing returns the engine's tees if bucket's writes should fill the
// cache through them (write-through buckets; write-back data is local
// already).
func (e *Engine) teeing(bucket string) *tees {
	if e.tees == nil || e.writeMode(bucket) != WriteThrough {
		return nil
	}
	return e.tees
}

// startTee starts a tee for a new origin upload; failures only cost the fill.
func (t *tees) startTee(bucket, key, uploadID string, meta store.ObjectMeta) {
	id, err := t.store.Create(bucket, key, meta)
	if err != nil {
		return
	}
	t.mu.Lock()
	t.ids[uploadID] = id
	t.mu.Unlock()
}

// take removes and returns the tee of an origin upload ("" if none).
func (t *tees) take(uploadID string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	id := t.ids[uploadID]
	delete(t.ids, uploadID)
	return id
}

func (t *tees) lookup(uploadID string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ids[uploadID]
}

// teePart returns body copied into the tee's part number as it is read
// (number 0: a single PUT's one part), and a finish func to call with the
// origin's answer once it is done with the body: the part's ETag there,
// which names the tee's part (empty for a single PUT, whose tee is
// checked by its size), or its error, which drops it. A failing tee never
// fails the origin's read.
func (t *tees) teePart(bucket, key, uploadID string, number int, body io.Reader, size int64) (io.Reader, func(string, error)) {
	id := t.lookup(uploadID)
	if id == "" {
		return body, func(string, error) {}
	}
	type answer struct {
		etag string
		ok   bool
	}
	pr, pw := io.Pipe()
	answered := make(chan answer, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := t.store.PutPartNamed(t.ctx, bucket, key, id, max(number, 1), pr, size, func() (string, bool) {
			a := <-answered
			return a.etag, a.ok
		})
		pr.CloseWithError(err) // unblocks the tee's writes after a local failure
	}()
	finish := func(etag string, originErr error) {
		answered <- answer{etag, originErr == nil}
		if originErr != nil {
			pw.CloseWithError(originErr) // the local part is dropped too
		} else {
			pw.Close()
		}
		<-done
	}
	return io.TeeReader(body, &softWriter{w: pw}), finish
}

// softWriter writes to w until a write fails, then drops the rest: the tee
// must never fail the origin upload it copies.
type softWriter struct {
	w      io.Writer
	failed bool
}

func (s *softWriter) Write(p []byte) (int, error) {
	if !s.failed {
		if _, err := s.w.Write(p); err != nil {
			s.failed = true
		}
	}
	return len(p), nil
}

// source returns the tee of a completed object being filled, if any.
func (t *tees) source(id store.ChunkID) store.Assembled {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sources[version{id.Bucket, id.Key, id.ETag}]
}

// completed fills the cache with the object info names from the tee of
// uploadID, once the origin completed it with parts. The tee must hold the
// same bytes: same parts, same ETags, same size, else it is dropped. A
// single PUT's tee (single) is one part, checked by its size.
func (e *Engine) completed(t *tees, uploadID string, parts []store.CompletePart, info store.ObjectInfo, single bool) {
	id := t.take(uploadID)
	if id == "" {
		return
	}
	var asm store.Assembled
	var err error
	if single {
		asm, err = t.store.AssembleWhole(info.Bucket, info.Key, id)
	} else {
		asm, err = t.store.Assemble(info.Bucket, info.Key, id, parts)
	}
	if err != nil {
		t.store.Remove(id)
		return
	}
	// A single PUT's tee is the very byte stream the origin took, so its
	// size is the check: the origin may have stored it as a multipart
	// upload of its own (an S3 origin does past its part size), whose
	// ETag is not the part's MD5. Parts the client uploaded must add up
	// to the origin's ETag.
	if asm.Size() != info.Size || (!single && asm.ETag() != info.ETag) {
		asm.Remove()
		return
	}
	v := version{info.Bucket, info.Key, info.ETag}
	t.mu.Lock()
	t.sources[v] = asm
	t.mu.Unlock()
	e.fillAsync(info, func() {
		t.mu.Lock()
		delete(t.sources, v)
		t.mu.Unlock()
		asm.Remove()
	})
}

// teePut tees a write-through PUT's body (larger than a chunk: smaller
// ones are kept in memory) into a one-part tee upload, and reports
// whether it does. The func returned takes the origin's answer: on
// success the object fills the cache from the tee, else the tee is
// dropped.
func (e *Engine) teePut(bucket, key string, body io.Reader, size int64, meta store.ObjectMeta) (io.Reader, func(store.ObjectInfo, error), bool) {
	t := e.teeing(bucket)
	if t == nil || size <= e.opts.ChunkSize {
		return body, func(store.ObjectInfo, error) {}, false
	}
	teeID := "granary-put-" + strconv.FormatUint(e.putTees.Add(1), 10)
	t.startTee(bucket, key, teeID, meta)
	body, finish := t.teePart(bucket, key, teeID, 0, body, size)
	return body, func(info store.ObjectInfo, err error) {
		finish("", err)
		if err != nil || info.ETag == "" {
			if id := t.take(teeID); id != "" {
				t.store.Remove(id)
			}
			return
		}
		e.completed(t, teeID, nil, info, true)
	}, true
}
