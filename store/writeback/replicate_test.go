// The Replicate hook: it sees every write-back object's bytes before the
// write is acknowledged, and a failed replication fails the write and
// leaves nothing behind.
package writeback

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/granary-dev/granary/store"
)

// copies records what Replicate was given, and fails while fail is set.
type copies struct {
	mu   sync.Mutex
	got  map[string][]byte
	info map[string]store.ObjectInfo
	fail error
}

func (c *copies) replicate(ctx context.Context, info store.ObjectInfo, open func() (io.ReadCloser, error)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail != nil {
		return c.fail
	}
	rc, err := open()
	if err != nil {
		return err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return err
	}
	c.got[info.Key], c.info[info.Key] = b, info
	return nil
}

func TestReplicateSeesEveryAcknowledgedObject(t *testing.T) {
	raw := s3Origin(t)
	b := newBucket(t, raw)
	c := &copies{got: map[string][]byte{}, info: map[string]store.ObjectInfo{}}
	l := openLog(t, Options{Origin: newGate(raw, false), WriteBack: always}, hooks{staged: c.replicate})
	ctx := testCtx(t)
	one := payload(3<<20+1, 7)
	info, err := l.Put(ctx, b, "single", bytes.NewReader(one), int64(len(one)), store.ObjectMeta{ContentType: "x/y"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(c.got["single"], one) || c.info["single"].ETag != info.ETag || c.info["single"].ContentType != "x/y" {
		t.Fatalf("replicated %d bytes, info %+v; acknowledged %+v", len(c.got["single"]), c.info["single"], info)
	}
	p1, p2 := payload(5<<20, 8), payload(1<<20, 9)
	id, err := l.NewUpload(ctx, b, "multi", store.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	var cps []store.CompletePart
	for i, data := range [][]byte{p1, p2} {
		pi, err := l.PutPart(ctx, b, "multi", id, i+1, bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		cps = append(cps, store.CompletePart{Number: pi.Number, ETag: pi.ETag})
	}
	minfo, err := l.CompleteUpload(ctx, b, "multi", id, cps)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(c.got["multi"], append(p1, p2...)) || c.info["multi"].ETag != minfo.ETag {
		t.Fatalf("multipart: replicated %d bytes, etag %q; acknowledged %q", len(c.got["multi"]), c.info["multi"].ETag, minfo.ETag)
	}
}

func TestReplicateFailureFailsTheWrite(t *testing.T) {
	raw := s3Origin(t)
	b := newBucket(t, raw)
	c := &copies{got: map[string][]byte{}, info: map[string]store.ObjectInfo{}, fail: errors.New("no peer")}
	g := newGate(raw, true)
	l := openLog(t, Options{Origin: g, WriteBack: always}, hooks{staged: c.replicate})
	ctx := testCtx(t)
	data := payload(1<<20, 11)
	_, err := l.Put(ctx, b, "lost", bytes.NewReader(data), int64(len(data)), store.ObjectMeta{})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Put with replication failing: %v, want ErrUnavailable", err)
	}
	if st := l.Stats(); st.DirtyBytes != 0 || st.DirtyObjects != 0 {
		t.Fatalf("a refused write left %+v", st)
	}
	if _, err := l.Stat(ctx, b, "lost"); !errors.Is(err, store.ErrNoSuchKey) {
		t.Fatalf("a refused write is served: %v", err)
	}
	flush(t, l, b)
	wantMissing(t, raw, b, "lost")
}
