// Write-back behaviour against MinIO: staged writes are read back before
// the origin has them, reach it byte-exact, survive a restart, and land in
// order per key; pass-through writes never overtake pending ones.
package writeback

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/granary-dev/granary/store"
)

func TestPendingPutReadsThenLands(t *testing.T) {
	raw := s3Origin(t)
	b := newBucket(t, raw)
	g := newGate(raw, false)
	var mu sync.Mutex
	var persisted []store.ObjectInfo
	var originETags []string
	l := openLog(t, Options{Origin: g, WriteBack: always}, hooks{persisted: func(staged store.ObjectInfo, etag string) {
		mu.Lock()
		defer mu.Unlock()
		persisted = append(persisted, staged)
		originETags = append(originETags, etag)
	}})
	ctx := testCtx(t)
	data := payload(300<<10+7, 1)
	meta := store.ObjectMeta{ContentType: "text/x-test", User: map[string]string{"Epoch": "3"}}
	info, err := l.Put(ctx, b, "dir/obj", bytes.NewReader(data), int64(len(data)), meta)
	if err != nil {
		t.Fatal(err)
	}
	if info.ETag != md5Hex(data) || info.Size != int64(len(data)) || info.User["epoch"] != "3" {
		t.Fatalf("Put = %+v, want ETag %s (the body's MD5) and normalized metadata", info, md5Hex(data))
	}
	g.awaitAttempt(t, "dir/obj")
	wantMissing(t, raw, b, "dir/obj")
	if st, err := l.Stat(ctx, b, "dir/obj"); err != nil || st.ETag != info.ETag || st.ContentType != "text/x-test" {
		t.Fatalf("Stat = %+v, %v", st, err)
	}
	got, gi := read(t, l, b, "dir/obj")
	if !bytes.Equal(got, data) || gi.ETag != info.ETag {
		t.Fatalf("Get returned %d bytes, ETag %s", len(got), gi.ETag)
	}
	rc, _, err := l.Get(ctx, b, "dir/obj", store.ReadRange{Offset: 1000, Length: 10, ETag: info.ETag})
	if err != nil {
		t.Fatal(err)
	}
	part := make([]byte, 20)
	n, _ := rc.Read(part)
	rc.Close()
	if !bytes.Equal(part[:n], data[1000:1010]) {
		t.Fatalf("ranged Get = %x, want %x", part[:n], data[1000:1010])
	}
	if _, _, err := l.Get(ctx, b, "dir/obj", store.ReadRange{Length: -1, ETag: md5Hex([]byte("other"))}); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("Get with another ETag = %v, want ErrPreconditionFailed", err)
	}
	wantStaged(t, l, b, "dir/obj", store.ReadRange{Offset: 5, Length: 4096, ETag: info.ETag}, data[5:5+4096])
	if _, err := l.GetStaged(b, "dir/obj", store.ReadRange{Length: -1, ETag: md5Hex([]byte("other"))}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetStaged of another version = %v, want ErrNotFound", err)
	}
	page, err := l.List(ctx, b, store.ListOptions{Delimiter: "/"})
	if err != nil || !slices.Equal(page.CommonPrefixes, []string{"dir/"}) || len(page.Objects) != 0 {
		t.Fatalf("List(delimiter /) = %+v, %v; want the prefix dir/", page, err)
	}
	page, err = l.List(ctx, b, store.ListOptions{Prefix: "dir/"})
	if err != nil || len(page.Objects) != 1 || page.Objects[0].ETag != info.ETag || page.Objects[0].Size != info.Size {
		t.Fatalf("List(prefix dir/) = %+v, %v", page, err)
	}
	if l.Persisted(b, "dir/obj") {
		t.Fatal("Persisted before the upload")
	}
	if st := l.Stats(); st.DirtyBytes != int64(len(data)) || st.DirtyObjects != 1 {
		t.Fatalf("Stats = %+v, want %d bytes of 1 object", st, len(data))
	}

	g.Open()
	flush(t, l, b)
	if oi := wantData(t, raw, b, "dir/obj", data); oi.ETag != info.ETag || oi.ContentType != "text/x-test" || oi.User["epoch"] != "3" {
		t.Fatalf("origin holds %+v", oi)
	}
	if !l.Persisted(b, "dir/obj") {
		t.Fatal("not Persisted after the flush")
	}
	if _, err := l.GetStaged(b, "dir/obj", store.ReadRange{Length: -1, ETag: info.ETag}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetStaged of a landed object = %v, want ErrNotFound (never the origin)", err)
	}
	if st := l.Stats(); st != (Stats{}) {
		t.Fatalf("Stats after the flush = %+v, want zero", st)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(persisted) != 1 || persisted[0].ETag != info.ETag || persisted[0].Key != "dir/obj" || originETags[0] != info.ETag {
		t.Fatalf("OnPersisted calls: %+v with origin ETags %v", persisted, originETags)
	}
}

func TestMultipartWriteBack(t *testing.T) {
	raw := s3Origin(t)
	b := newBucket(t, raw)
	g := newGate(raw, false)
	l := openLog(t, Options{Origin: g, WriteBack: always})
	ctx := testCtx(t)
	p1, p2 := payload(5<<20, 2), payload(1<<20+5, 3)
	id, err := l.NewUpload(ctx, b, "ckpt", store.ObjectMeta{ContentType: "application/x-ckpt"})
	if err != nil {
		t.Fatal(err)
	}
	var cps []store.CompletePart
	for i, data := range [][]byte{p1, p2} {
		pi, err := l.PutPart(ctx, b, "ckpt", id, i+1, bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		cps = append(cps, store.CompletePart{Number: pi.Number, ETag: pi.ETag})
	}
	if st := l.Stats(); st.DirtyBytes != int64(len(p1)+len(p2)) || st.DirtyObjects != 0 {
		t.Fatalf("Stats with an open upload = %+v", st)
	}
	if page, err := l.ListUploads(ctx, b, store.UploadListOptions{}); err != nil || len(page.Uploads) != 1 || page.Uploads[0].UploadID != id {
		t.Fatalf("ListUploads = %+v, %v", page, err)
	}
	info, err := l.CompleteUpload(ctx, b, "ckpt", id, cps)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := store.MultipartETag([]string{md5Hex(p1), md5Hex(p2)})
	if info.ETag != want || info.ContentType != "application/x-ckpt" {
		t.Fatalf("CompleteUpload = %+v, want ETag %s", info, want)
	}
	all := append(slices.Clone(p1), p2...)
	if gi := wantData(t, l, b, "ckpt", all); gi.ETag != want {
		t.Fatalf("staged Get ETag %s", gi.ETag)
	}
	wantMissing(t, raw, b, "ckpt")
	g.Open()
	flush(t, l, b)
	if oi := wantData(t, raw, b, "ckpt", all); oi.ETag != want || oi.ContentType != "application/x-ckpt" {
		t.Fatalf("origin holds %+v, want ETag %s (the same parts)", oi, want)
	}
	if st := l.Stats(); st != (Stats{}) {
		t.Fatalf("Stats after the flush = %+v", st)
	}
}

// writeSet writes a mix of objects through l: small, empty, unknown
// size, multipart, and a delete of an object the origin has. It returns
// what the origin must end with (nil: no such key).
func writeSet(t *testing.T, l *Log, raw store.Origin, b string) map[string][]byte {
	ctx := testCtx(t)
	want := map[string][]byte{}
	put(t, raw, b, "gone", []byte("deleted through the log"))
	if err := l.Delete(ctx, b, "gone"); err != nil {
		t.Fatal(err)
	}
	want["gone"] = nil
	for i, size := range []int{0, 1, 100 << 10, 3<<20 + 1} {
		key := "single/" + string(rune('a'+i))
		want[key] = payload(size, uint64(10+i))
		put(t, l, b, key, want[key])
	}
	want["unknown-size"] = payload(70000, 20)
	if _, err := l.Put(ctx, b, "unknown-size", bytes.NewReader(want["unknown-size"]), -1, store.ObjectMeta{}); err != nil {
		t.Fatal(err)
	}
	id, err := l.NewUpload(ctx, b, "multi", store.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	p1, p3 := payload(5<<20, 21), payload(1000, 22)
	pi1, err1 := l.PutPart(ctx, b, "multi", id, 1, bytes.NewReader(p1), int64(len(p1)))
	pi3, err3 := l.PutPart(ctx, b, "multi", id, 3, bytes.NewReader(p3), int64(len(p3)))
	if err := errors.Join(err1, err3); err != nil {
		t.Fatal(err)
	}
	if _, err := l.CompleteUpload(ctx, b, "multi", id, []store.CompletePart{{Number: 1, ETag: pi1.ETag}, {Number: 3, ETag: pi3.ETag}}); err != nil {
		t.Fatal(err)
	}
	want["multi"] = append(slices.Clone(p1), p3...)
	return want
}

func checkOrigin(t *testing.T, raw store.Origin, b string, want map[string][]byte) {
	t.Helper()
	for _, key := range slices.Sorted(maps.Keys(want)) {
		if want[key] == nil {
			wantMissing(t, raw, b, key)
		} else {
			wantData(t, raw, b, key, want[key])
		}
	}
}

func TestRestartUploadsEverything(t *testing.T) {
	raw := s3Origin(t)
	b := newBucket(t, raw)
	dir := t.TempDir()
	l, err := Open(Options{Origin: newGate(raw, false), Dir: dir, WriteBack: always})
	if err != nil {
		t.Fatal(err)
	}
	l.Start()
	want := writeSet(t, l, raw, b)
	dirty := l.Stats()
	if dirty.DirtyObjects != len(want) {
		t.Fatalf("Stats before the restart = %+v, want %d objects", dirty, len(want))
	}
	// What a crash leaves: a Put cut while its body arrived (an unsealed
	// upload), and one staged but not journaled (never acknowledged).
	if _, err := l.puts.Create(b, "cut", store.ObjectMeta{}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.stageOne(testCtx(t), b, "unjournaled", bytes.NewReader([]byte("x")), 1, store.ObjectMeta{}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	put(t, raw, b, "gone", []byte("still here: the delete is journaled, not done"))

	l2 := openLog(t, Options{Origin: raw, Dir: dir, RetryMin: time.Millisecond})
	if st := l2.Stats(); st != dirty {
		t.Fatalf("Stats after the restart = %+v, want %+v", st, dirty)
	}
	if page, err := l2.puts.ListUploads(b, store.UploadListOptions{}); err != nil || len(page.Uploads) != 0 {
		t.Fatalf("a cut Put survived the restart: %+v, %v", page, err)
	}
	if n := len(l2.puts.Sealed()) + len(l2.stage.Sealed()); n != dirty.DirtyObjects-1 {
		t.Fatalf("%d staged objects after the restart, want %d (one per journaled put)", n, dirty.DirtyObjects-1)
	}
	flush(t, l2, b)
	checkOrigin(t, raw, b, want)
	recs, err := l2.readJournal()
	if err != nil || len(recs) != 0 {
		t.Fatalf("journal after the flush holds %d records (%v)", len(recs), err)
	}
	if sealed := append(l2.stage.Sealed(), l2.puts.Sealed()...); len(sealed) != 0 {
		t.Fatalf("stage still holds %v", sealed)
	}
	if st := l2.Stats(); st != (Stats{}) {
		t.Fatalf("Stats after the flush = %+v", st)
	}
}

// versions writes ops to one key through l: a put of each payload, or a
// delete for nil. It returns their ETags ("" for deletes).
func versions(t *testing.T, l *Log, b, key string, ops [][]byte) []string {
	var etags []string
	for _, data := range ops {
		if data == nil {
			if err := l.Delete(testCtx(t), b, key); err != nil {
				t.Fatal(err)
			}
			etags = append(etags, "")
			continue
		}
		etags = append(etags, put(t, l, b, key, data).ETag)
	}
	return etags
}

// wantOrdered asserts that the writes of key the gate saw land are a
// subsequence of etags ("" for deletes), in order (nothing older after
// something newer), and that the last to land is the last of etags.
func wantOrdered(t *testing.T, g *gate, key string, etags []string) {
	t.Helper()
	pos := -1
	var seen []event
	for _, e := range g.Events() {
		if e.key != key {
			continue
		}
		seen = append(seen, e)
		i := slices.Index(etags[pos+1:], e.etag)
		if i < 0 {
			t.Fatalf("landed %v: %v is not newer than what landed before (versions %v)", seen, e, etags)
		}
		pos += 1 + i
	}
	// Deletes all look alike: the last one landed may have been matched
	// to an earlier delete above, so compare the ends directly.
	if len(seen) == 0 || seen[len(seen)-1].etag != etags[len(etags)-1] {
		t.Fatalf("landed %v; the last version %q did not land last", seen, etags[len(etags)-1])
	}
}

func TestOrderPerKey(t *testing.T) {
	raw := s3Origin(t)
	b := newBucket(t, raw)
	a, bb, c := []byte("version A"), []byte("version B, longer"), []byte("version C")
	t.Run("Running", func(t *testing.T) {
		g := newGate(raw, false)
		l := openLog(t, Options{Origin: g, WriteBack: always})
		etags := versions(t, l, b, "k", [][]byte{a})
		g.awaitAttempt(t, "k") // A is uploading: it cannot be skipped
		etags = append(etags, versions(t, l, b, "k", [][]byte{bb, nil, c})...)
		if got, _ := read(t, l, b, "k"); !bytes.Equal(got, c) {
			t.Fatalf("Get = %q, want the newest version", got)
		}
		g.Open()
		flush(t, l, b)
		wantOrdered(t, g, "k", etags)
		wantData(t, raw, b, "k", c)
		if n := len(g.Events()); n != 2 {
			t.Errorf("%d writes landed (%v), want 2: A (uploading) and C (superseding the rest)", n, g.Events())
		}
	})
	t.Run("Restart", func(t *testing.T) {
		dir := t.TempDir()
		g := newGate(raw, false)
		l, err := Open(Options{Origin: g, Dir: dir, WriteBack: always})
		if err != nil {
			t.Fatal(err)
		}
		l.Start()
		etags := versions(t, l, b, "r", [][]byte{a})
		g.awaitAttempt(t, "r")
		etags = append(etags, versions(t, l, b, "r", [][]byte{nil, bb, c})...)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		g2 := newGate(raw, true)
		l2 := openLog(t, Options{Origin: g2, Dir: dir})
		flush(t, l2, b)
		wantOrdered(t, g2, "r", etags)
		wantData(t, raw, b, "r", c)
	})
}

// TestDirectWaitsForPending switches a bucket from write-back to
// pass-through while writes of a key wait: the direct write waits for the
// upload in flight and supersedes the one waiting.
func TestDirectWaitsForPending(t *testing.T) {
	raw := s3Origin(t)
	b := newBucket(t, raw)
	var wb atomic.Bool
	wb.Store(true)
	g := newGate(raw, false)
	l := openLog(t, Options{Origin: g, WriteBack: func(string) bool { return wb.Load() }})
	v1, v2, v3 := []byte("one"), []byte("two, pending"), []byte("three, direct")
	e1 := put(t, l, b, "k", v1).ETag
	g.awaitAttempt(t, "k")
	put(t, l, b, "k", v2)
	wb.Store(false)

	done := make(chan error, 1)
	go func() {
		_, err := l.Put(directCtx(testCtx(t)), b, "k", bytes.NewReader(v3), int64(len(v3)), store.ObjectMeta{})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("direct Put returned (%v) while an older upload of the key was in flight", err)
	case <-time.After(300 * time.Millisecond):
	}
	wantMissing(t, raw, b, "k")
	g.Open()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(opTimeout):
		t.Fatal("direct Put never finished")
	}
	flush(t, l, b)
	wantData(t, raw, b, "k", v3)
	wantData(t, l, b, "k", v3)
	if ev := g.Events(); len(ev) != 2 || ev[0].etag != e1 || ev[1].etag != md5Hex(v3) {
		t.Fatalf("writes at the origin %v, want the first version, then the direct one (the second was superseded)", ev)
	}
	if !l.Persisted(b, "k") || l.Stats() != (Stats{}) {
		t.Fatalf("after the direct write: persisted %v, stats %+v", l.Persisted(b, "k"), l.Stats())
	}
}

// TestFailedDirectKeepsPending: a direct write that fails supersedes
// nothing; the pending write-back still lands.
func TestFailedDirectKeepsPending(t *testing.T) {
	raw := s3Origin(t)
	b := newBucket(t, raw)
	var wb atomic.Bool
	wb.Store(true)
	g := newGate(raw, false)
	l := openLog(t, Options{Origin: g, WriteBack: func(string) bool { return wb.Load() }})
	put(t, l, b, "k", []byte("one"))
	g.awaitAttempt(t, "k")
	v2 := []byte("two")
	put(t, l, b, "k", v2)
	wb.Store(false)
	g.Open()
	_, err := l.Put(directCtx(testCtx(t)), b, "k", bytes.NewReader([]byte("short")), 100, store.ObjectMeta{})
	if !errors.Is(err, store.ErrIncompleteBody) {
		t.Fatalf("direct Put of a short body = %v", err)
	}
	flush(t, l, b)
	wantData(t, raw, b, "k", v2)
}

// wantStaged checks that GetStaged reads want from the staged copy.
func wantStaged(t *testing.T, l *Log, bucket, key string, r store.ReadRange, want []byte) {
	t.Helper()
	rc, err := l.GetStaged(bucket, key, r)
	if err != nil {
		t.Fatalf("GetStaged: %v", err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("GetStaged read %d bytes (%v), want %d", len(got), err, len(want))
	}
}
