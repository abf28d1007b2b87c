// Tests of the parts store: parts and their replacement, bad bodies,
// completions and their errors, reading assemblies, aborts and locks.
package parts

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"golang.org/x/sys/unix"

	"github.com/granary-dev/granary/store"
)

func openStore(t *testing.T, dir string, noSync bool) *Store {
	t.Helper()
	s, err := Open(Options{Dir: dir, NoSync: noSync})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newUpload(t *testing.T, s *Store, key string) string {
	t.Helper()
	id, err := s.Create("bkt", key, store.ObjectMeta{ContentType: "text/plain", User: map[string]string{"a": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func putPart(t *testing.T, s *Store, key, id string, n int, data []byte) store.PartInfo {
	t.Helper()
	p, err := s.PutPart(context.Background(), "bkt", key, id, n, bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("PutPart(%d): %v", n, err)
	}
	return p
}

func md5Hex(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

func randBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// dirNames lists the names in an upload's directory.
func dirNames(t *testing.T, s *Store, id string) []string {
	t.Helper()
	names, err := readNames(s.path(id))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

func listAllParts(t *testing.T, s *Store, key, id string) []store.PartInfo {
	t.Helper()
	page, err := s.ListParts("bkt", key, id, store.PartListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return page.Parts
}

func TestPutAndReplacePart(t *testing.T) {
	s := openStore(t, t.TempDir(), false)
	id := newUpload(t, s, "k")
	before := time.Now()
	p := putPart(t, s, "k", id, 3, []byte("three"))
	if p.Number != 3 || p.ETag != md5Hex([]byte("three")) || p.Size != 5 ||
		p.LastModified.Before(before.Add(-time.Second)) || p.LastModified.After(time.Now().Add(time.Second)) {
		t.Fatalf("PutPart = %+v", p)
	}
	putPart(t, s, "k", id, 1, []byte("one"))
	p2 := putPart(t, s, "k", id, 3, []byte("THREE!"))
	parts := listAllParts(t, s, "k", id)
	if len(parts) != 2 || parts[0].Number != 1 || parts[1] != p2 || p2.ETag != md5Hex([]byte("THREE!")) {
		t.Fatalf("ListParts after replace = %+v", parts)
	}
	want := []string{"part-1-", "part-1.json", "part-3-", "part-3.json", "upload.json"}
	got := dirNames(t, s, id)
	if len(got) != len(want) {
		t.Fatalf("upload dir holds %v, want one data file and one info per part", got)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Fatalf("upload dir holds %v", got)
		}
	}
}

type failingBody struct{ n int }

var errBody = errors.New("connection reset")

func (b *failingBody) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, errBody
	}
	k := min(len(p), b.n)
	b.n -= k
	return k, nil
}

func TestBadBodiesKeepEarlierPart(t *testing.T) {
	s := openStore(t, t.TempDir(), true)
	id := newUpload(t, s, "k")
	orig := putPart(t, s, "k", id, 1, []byte("original"))
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	cases := []struct {
		name string
		ctx  context.Context
		body io.Reader
		size int64
		want error
	}{
		{"short", ctx, strings.NewReader("short"), 100, store.ErrIncompleteBody},
		{"one byte short", ctx, strings.NewReader("abc"), 4, store.ErrIncompleteBody},
		{"failing", ctx, &failingBody{n: 300 << 10}, 1 << 20, errBody},
		{"failing unknown size", ctx, &failingBody{n: 10}, -1, errBody},
		{"cancelled", cancelled, strings.NewReader("data"), 4, context.Canceled},
		{"too large", ctx, strings.NewReader("x"), store.MaxPartSize + 1, store.ErrTooLarge},
	}
	for _, c := range cases {
		if _, err := s.PutPart(c.ctx, "bkt", "k", id, 1, c.body, c.size); !errors.Is(err, c.want) {
			t.Errorf("%s: PutPart = %v, want %v", c.name, err, c.want)
		}
	}
	if parts := listAllParts(t, s, "k", id); len(parts) != 1 || parts[0] != orig {
		t.Fatalf("parts after failed puts = %+v, want %+v", parts, orig)
	}
	for _, n := range dirNames(t, s, id) {
		if strings.HasPrefix(n, tmpPrefix) {
			t.Fatalf("temp file %s left behind", n)
		}
	}
	// A longer body: exactly size bytes are taken.
	p, err := s.PutPart(ctx, "bkt", "k", id, 2, strings.NewReader("abcdef"), 3)
	if err != nil || p.Size != 3 || p.ETag != md5Hex([]byte("abc")) {
		t.Fatalf("PutPart(3 of 6 bytes) = %+v, %v", p, err)
	}
	// Unknown size: the whole body.
	p, err = s.PutPart(ctx, "bkt", "k", id, 3, strings.NewReader("abcdef"), -1)
	if err != nil || p.Size != 6 || p.ETag != md5Hex([]byte("abcdef")) {
		t.Fatalf("PutPart(unknown size) = %+v, %v", p, err)
	}
}

func TestPartNumbersAndIDs(t *testing.T) {
	s := openStore(t, t.TempDir(), true)
	id := newUpload(t, s, "k")
	other := newUpload(t, s, "other")
	ctx := context.Background()
	for _, n := range []int{0, -1, store.MaxPartNumber + 1} {
		if _, err := s.PutPart(ctx, "bkt", "k", id, n, strings.NewReader("x"), 1); !errors.Is(err, store.ErrInvalidPartNumber) {
			t.Errorf("PutPart(number %d) = %v", n, err)
		}
	}
	putPart(t, s, "k", id, store.MaxPartNumber, []byte("last"))
	for _, c := range []struct{ bucket, key, id string }{
		{"bkt", "k", "nope"}, {"bkt", "k", other}, {"bkt2", "k", id}, {"bkt", "k2", id}, {"bkt", "k", "../" + id},
	} {
		if _, err := s.PutPart(ctx, c.bucket, c.key, c.id, 1, strings.NewReader("x"), 1); !errors.Is(err, store.ErrNoSuchUpload) {
			t.Errorf("PutPart(%v) = %v", c, err)
		}
		if _, err := s.ListParts(c.bucket, c.key, c.id, store.PartListOptions{}); !errors.Is(err, store.ErrNoSuchUpload) {
			t.Errorf("ListParts(%v) = %v", c, err)
		}
		if err := s.Abort(c.bucket, c.key, c.id); !errors.Is(err, store.ErrNoSuchUpload) {
			t.Errorf("Abort(%v) = %v", c, err)
		}
		if _, err := s.Assemble(c.bucket, c.key, c.id, []store.CompletePart{{Number: 1, ETag: md5Hex([]byte("x"))}}); !errors.Is(err, store.ErrNoSuchUpload) {
			t.Errorf("Assemble(%v) = %v", c, err)
		}
	}
	// IDs: URL-safe, unique, in creation order.
	ids := []string{id, other}
	for range 50 {
		ids = append(ids, newUpload(t, s, "k"))
	}
	if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Fatalf("IDs not unique and increasing: %v", ids)
	}
	for _, x := range ids {
		if strings.Trim(x, "0123456789abcdef") != "" || len(x) < 32 {
			t.Fatalf("ID %q is not hex of at least 16 bytes", x)
		}
	}
}

func TestAbort(t *testing.T) {
	s := openStore(t, t.TempDir(), false)
	id := newUpload(t, s, "k")
	putPart(t, s, "k", id, 1, []byte("x"))
	if err := s.Abort("bkt", "k", id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.path(id)); !os.IsNotExist(err) {
		t.Fatalf("upload dir after Abort: %v", err)
	}
	if err := s.Abort("bkt", "k", id); !errors.Is(err, store.ErrNoSuchUpload) {
		t.Fatalf("second Abort = %v", err)
	}
	if _, err := s.PutPart(context.Background(), "bkt", "k", id, 1, strings.NewReader("x"), 1); !errors.Is(err, store.ErrNoSuchUpload) {
		t.Fatalf("PutPart after Abort = %v", err)
	}
	if names, _ := readNames(s.dir); len(names) != 0 {
		t.Fatalf("store dir after Abort holds %v", names)
	}
}

// checkReader reads r with buffers of random sizes and compares with
// want; short ranges also go through iotest.TestReader.
func checkReader(rc io.Reader, want []byte, rnd *rand.Rand) error {
	if len(want) <= 64<<10 {
		return iotest.TestReader(rc, want)
	}
	return readEach(want, func() ([]byte, error) { return readSome(rc, 1+rnd.Int64N(200<<10)) })
}

// checkSections reads rc to its end by NextSection, the bytes of each
// section read from its file, with a Read now and then, and checks it
// yields want, no section crossing a part file's end.
func checkSections(rc io.Reader, want []byte, rnd *rand.Rand) error {
	fs, ok := rc.(store.FileSections)
	if !ok {
		return fmt.Errorf("%T is not FileSections", rc)
	}
	return readEach(want, func() ([]byte, error) {
		max := 1 + rnd.Int64N(3<<20)
		if rnd.IntN(4) == 0 {
			return readSome(rc, max)
		}
		fd, off, n, err := fs.NextSection(max)
		if err != nil {
			return nil, err
		}
		if n < 1 || n > max {
			return nil, fmt.Errorf("a section of %d bytes, asked at most %d", n, max)
		}
		b := make([]byte, n)
		if m, err := unix.Pread(int(fd), b, off); int64(m) != n {
			return nil, fmt.Errorf("section [%d, +%d) of its file: read %d (%v)", off, n, m, err)
		}
		return b, nil
	})
}

// readEach gathers what next yields until io.EOF and compares it with
// want.
func readEach(want []byte, next func() ([]byte, error)) error {
	var got []byte
	for {
		b, err := next()
		got = append(got, b...)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("read %d bytes, want %d, or other bytes", len(got), len(want))
	}
	return nil
}

// readSome is one Read of rc into a buffer of max bytes.
func readSome(rc io.Reader, max int64) ([]byte, error) {
	buf := make([]byte, max)
	n, err := rc.Read(buf)
	return buf[:n], err
}

// fixtureParts uploads parts 1..3 (two of MinPartSize+k bytes, a small
// last one) and returns them.
func fixtureParts(t *testing.T, s *Store, key, id string) [][]byte {
	t.Helper()
	data := [][]byte{randBytes(1, store.MinPartSize), randBytes(2, store.MinPartSize+3), randBytes(3, 1000)}
	for i, d := range data {
		putPart(t, s, key, id, i+1, d)
	}
	return data
}

func complete(data [][]byte, numbers ...int) []store.CompletePart {
	var cps []store.CompletePart
	for _, n := range numbers {
		cps = append(cps, store.CompletePart{Number: n, ETag: md5Hex(data[n-1])})
	}
	return cps
}

func TestCompletionErrors(t *testing.T) {
	s := openStore(t, t.TempDir(), true)
	id := newUpload(t, s, "k")
	data := fixtureParts(t, s, "k", id)
	putPart(t, s, "k", id, 5, []byte("tiny"))
	putPart(t, s, "k", id, 6, []byte("six"))
	six := store.CompletePart{Number: 6, ETag: md5Hex([]byte("six"))}
	tiny := store.CompletePart{Number: 5, ETag: md5Hex([]byte("tiny"))}
	good := complete(data, 1, 2, 3)
	with := func(f func(c []store.CompletePart) []store.CompletePart) []store.CompletePart {
		return f(slices.Clone(good))
	}
	cases := []struct {
		name  string
		parts []store.CompletePart
		want  error
	}{
		{"none", nil, store.ErrInvalidPart},
		{"descending", with(func(c []store.CompletePart) []store.CompletePart { c[0], c[1] = c[1], c[0]; return c }), store.ErrInvalidPartOrder},
		{"duplicate", append(with(func(c []store.CompletePart) []store.CompletePart { return c[:2] }), good[1]), store.ErrInvalidPart},
		{"number 0", []store.CompletePart{{Number: 0, ETag: good[0].ETag}}, store.ErrInvalidPartNumber},
		{"number too big", []store.CompletePart{{Number: store.MaxPartNumber + 1, ETag: good[0].ETag}}, store.ErrInvalidPartNumber},
		{"missing part", []store.CompletePart{good[0], good[1], {Number: 4, ETag: good[0].ETag}}, store.ErrInvalidPart},
		{"wrong ETag", with(func(c []store.CompletePart) []store.CompletePart { c[1].ETag = c[0].ETag; return c }), store.ErrInvalidPart},
		{"not an MD5", with(func(c []store.CompletePart) []store.CompletePart { c[2].ETag = "zz"; return c }), store.ErrInvalidPart},
		{"small middle part", []store.CompletePart{good[0], good[1], tiny, six}, store.ErrEntityTooSmall},
		{"small first part", []store.CompletePart{tiny, six}, store.ErrEntityTooSmall},
	}
	for _, c := range cases {
		a, err := s.Assemble("bkt", "k", id, c.parts)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: Assemble = %v, want %v", c.name, err, c.want)
		}
		if a != nil {
			a.Close()
		}
	}
	// Failed completions leave the upload unlocked and whole.
	putPart(t, s, "k", id, 7, []byte("seven"))
	if n := len(listAllParts(t, s, "k", id)); n != 6 {
		t.Fatalf("%d parts after failed completions, want 6", n)
	}
	// Quotes and upper case are accepted; a small last part is fine.
	quoted := with(func(c []store.CompletePart) []store.CompletePart {
		c[0].ETag = `"` + strings.ToUpper(c[0].ETag) + `"`
		return c
	})
	a, err := s.Assemble("bkt", "k", id, quoted)
	if err != nil {
		t.Fatalf("Assemble(quoted ETags) = %v", err)
	}
	a.Close()
	a, err = s.Assemble("bkt", "k", id, []store.CompletePart{{Number: 5, ETag: md5Hex([]byte("tiny"))}})
	if err != nil {
		t.Fatalf("Assemble(one small part) = %v", err)
	}
	a.Close()
}

func TestAssemblyReads(t *testing.T) {
	s := openStore(t, t.TempDir(), true)
	id := newUpload(t, s, "k")
	data := fixtureParts(t, s, "k", id)
	putPart(t, s, "k", id, 4, nil) // an empty part, listed last
	data = append(data, nil)
	a, err := s.Assemble("bkt", "k", id, complete(data, 1, 2, 4))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	model := slices.Concat(data[0], data[1])
	wantETag, _ := store.MultipartETag([]string{md5Hex(data[0]), md5Hex(data[1]), md5Hex(nil)})
	if a.Size != int64(len(model)) || a.ETag != wantETag || len(a.Parts) != 3 || a.Parts[1].Number != 2 ||
		a.Bucket != "bkt" || a.Key != "k" || a.UploadID != id || a.Meta.User["a"] != "b" {
		t.Fatalf("Assembly = size %d ETag %s parts %+v meta %+v; want size %d ETag %s",
			a.Size, a.ETag, a.Parts, a.Meta, len(model), wantETag)
	}
	b0 := int64(len(data[0]))
	size := int64(len(model))
	ranges := [][2]int64{{0, -1}, {0, size}, {0, size + 10}, {b0 - 1, 2}, {b0, 1}, {b0 - 5, 5},
		{b0, -1}, {size - 1, -1}, {size, -1}, {size, 5}, {3, 0}, {b0 - 100, 200}}
	r := rand.New(rand.NewPCG(9, 9))
	for range 30 {
		off := r.Int64N(size + 1)
		ranges = append(ranges, [2]int64{off, r.Int64N(size-off+50) - 10})
	}
	for _, rg := range ranges {
		off, n := rg[0], rg[1]
		end := size
		if n >= 0 {
			end = min(size, off+n)
		}
		rc, err := a.Open(off, n)
		if err != nil {
			t.Fatalf("Open(%d, %d): %v", off, n, err)
		}
		if err := checkReader(rc, model[off:end], r); err != nil {
			t.Fatalf("Open(%d, %d): %v", off, n, err)
		}
		rc.Close()
		rc, _ = a.Open(off, n)
		if err := checkSections(rc, model[off:end], r); err != nil {
			t.Fatalf("Open(%d, %d) by sections: %v", off, n, err)
		}
		rc.Close()
	}
	for _, off := range []int64{-1, size + 1} {
		if _, err := a.Open(off, 1); err == nil {
			t.Errorf("Open(%d) succeeded", off)
		}
	}
	// A reader closed half-way reads no more.
	rc, _ := a.Open(0, -1)
	io.ReadFull(rc, make([]byte, 10))
	rc.Close()
	if n, err := rc.Read(make([]byte, 10)); n != 0 || err == nil {
		t.Fatalf("Read after Close = %d, %v", n, err)
	}
	a.Close()
	if _, err := a.Open(0, -1); err == nil {
		t.Fatal("Open after Close succeeded")
	}
}

func TestAssemblyLocksUpload(t *testing.T) {
	s := openStore(t, t.TempDir(), true)
	id := newUpload(t, s, "k")
	putPart(t, s, "k", id, 1, []byte("one"))
	cps := []store.CompletePart{{Number: 1, ETag: md5Hex([]byte("one"))}}
	a, err := s.Assemble("bkt", "k", id, cps)
	if err != nil {
		t.Fatal(err)
	}
	// PutPart waits for the lock: with a deadline it gives up.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := s.PutPart(ctx, "bkt", "k", id, 1, strings.NewReader("new"), 3); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("PutPart on a locked upload = %v, want it to wait", err)
	}
	// A waiting Abort and Assemble go on once the assembly is closed.
	done := make(chan error, 2)
	go func() { done <- s.Abort("bkt", "k", id) }()
	rc, err := a.Open(0, -1)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(rc); err != nil || string(b) != "one" {
		t.Fatalf("read while an Abort waits: %q, %v", b, err)
	}
	rc.Close()
	a.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Abort after Close = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Abort still waiting after the assembly was closed")
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	// Remove ends the upload: a waiting Assemble then finds none.
	id = newUpload(t, s, "k")
	putPart(t, s, "k", id, 1, []byte("one"))
	a, err = s.Assemble("bkt", "k", id, cps)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := s.Assemble("bkt", "k", id, cps)
		done <- err
	}()
	if err := a.Remove(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, store.ErrNoSuchUpload) {
			t.Fatalf("Assemble waiting on a removed upload = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Assemble still waiting after Remove")
	}
	if _, err := os.Stat(s.path(id)); !os.IsNotExist(err) {
		t.Fatalf("upload dir after Remove: %v", err)
	}
}
