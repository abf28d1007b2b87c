// Catalog tests: coverage rules, persistence across Close and Open, bad
// files, locks, torn-file detection and concurrent use.
package catalog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/internal/boltdb"
)

func TestCoverage(t *testing.T) {
	db := openT(t)
	if _, ok := db.Covered("b", ""); ok {
		t.Fatal("empty catalog covers")
	}
	t1 := t0.Add(time.Hour)
	must(t, db.Load("b", "a/", t1, sliceNext(nil), func(Change) error { return nil }))
	for _, c := range []struct {
		prefix string
		ok     bool
	}{{"a/", true}, {"a/x/", true}, {"a/x", true}, {"a", false}, {"", false}, {"b/", false}} {
		at, ok := db.Covered("b", c.prefix)
		if ok != c.ok || ok && !at.Equal(t1) {
			t.Fatalf("Covered(b, %q) = %v, %v; want %v", c.prefix, at, ok, c.ok)
		}
	}
	if _, ok := db.Covered("other", "a/"); ok {
		t.Fatal("coverage leaks across buckets")
	}
	// A running Load of "" uncovers a/ (nothing encloses ""); its end
	// covers "" and subsumes a/.
	var during []bool
	next := func() (Entry, bool, error) {
		_, ok1 := db.Covered("b", "")
		_, ok2 := db.Covered("b", "a/")
		during = append(during, ok1, ok2)
		return Entry{}, false, nil
	}
	must(t, db.Load("b", "", t0, next, nil))
	if slices.Contains(during, true) {
		t.Fatalf("covered during the Load: %v", during)
	}
	cov, err := db.Coverage("")
	if err != nil || !slices.Equal(cov, []Coverage{{Bucket: "b", Prefix: "", At: t0}}) {
		t.Fatalf("Coverage = %+v, %v", cov, err)
	}
	// A Load of a/ inside covered "" leaves a/ covered while it runs, and
	// then answers for a/ with its own time.
	during = nil
	must(t, db.Load("b", "a/", t1, func() (Entry, bool, error) {
		_, ok := db.Covered("b", "a/x")
		during = append(during, ok)
		return Entry{}, false, nil
	}, nil))
	if slices.Contains(during, false) {
		t.Fatal("a/ uncovered while enclosed by covered \"\"")
	}
	if at, ok := db.Covered("b", "a/x"); !ok || !at.Equal(t1) {
		t.Fatalf("Covered(a/x) = %v %v, want %v", at, ok, t1)
	}
	must(t, db.Load("c", "z", t0, sliceNext(nil), nil))
	cov, _ = db.Coverage("b")
	all, _ := db.Coverage("")
	if len(cov) != 2 || len(all) != 3 || all[2].Bucket != "c" {
		t.Fatalf("Coverage(b) = %+v, Coverage() = %+v", cov, all)
	}
}

func TestPersistence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalog.db")
	db := openAt(t, path)
	var keys []string
	for i := range 100 {
		keys = append(keys, fmt.Sprintf("d%d/k%03d", i%3, i))
	}
	loadKeys(t, db, "b", "", keys, 0)
	loadKeys(t, db, "gone", "", keys, 0)
	must(t, db.Put("b", entryOf("d1/new", 5)))
	must(t, db.Delete("b", keys[0]))
	must(t, db.DropBucket("gone"))
	objs, size, err := db.Count("b", "d1/")
	must(t, err)
	wantPage, err := db.List("b", store.ListOptions{Delimiter: "/", Prefix: "d1/", MaxKeys: 7})
	must(t, err)
	must(t, db.Close())
	if _, _, err := db.Get("b", keys[1]); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}

	db = openAt(t, path)
	if o2, s2, err := db.Count("b", "d1/"); err != nil || o2 != objs || s2 != size || objs != 34 {
		t.Fatalf("Count after reopen = %d, %d, %v; want %d, %d (34 objects)", o2, s2, err, objs, size)
	}
	page, err := db.List("b", store.ListOptions{Delimiter: "/", Prefix: "d1/", MaxKeys: 7})
	if err != nil || !slices.Equal(pageStrings(page), pageStrings(wantPage)) || page.NextAfter != wantPage.NextAfter {
		t.Fatalf("List after reopen = %+v, want %+v", page, wantPage)
	}
	if e, ok, err := db.Get("b", "d1/new"); err != nil || !ok || !sameEntry(e, entryOf("d1/new", 5)) {
		t.Fatalf("Get(d1/new) = %+v %v %v", e, ok, err)
	}
	if _, ok, _ := db.Get("b", keys[0]); ok {
		t.Fatal("deleted key back after reopen")
	}
	if n, _, _ := db.Count("gone", ""); n != 0 {
		t.Fatalf("dropped bucket holds %d", n)
	}
	cov, err := db.Coverage("")
	if err != nil || !slices.Equal(cov, []Coverage{{Bucket: "b", At: t0}}) {
		t.Fatalf("Coverage after reopen = %+v, %v", cov, err)
	}
}

func TestOpenGarbage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalog.db")
	junk := make([]byte, 64<<10)
	for i := range junk {
		junk[i] = byte(i * 7)
	}
	must(t, os.WriteFile(path, junk, 0o600))
	if _, err := Open(Options{Path: path, Logger: zerolog.Nop()}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open(garbage) = %v, want ErrCorrupt", err)
	}
	if b, err := os.ReadFile(path); err != nil || !slices.Equal(b, junk) {
		t.Fatal("garbage file was changed")
	}
}

func TestOpenLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalog.db")
	openAt(t, path)
	start := time.Now()
	_, err := Open(Options{Path: path, Logger: zerolog.Nop()})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
	if d := time.Since(start); d > boltdb.LockTimeout+3*time.Second {
		t.Fatalf("second Open took %v", d)
	}
}

// TestTornAfterReboot: a file not closed before a reboot may be torn and
// is refused; one left by a crashed process in the same boot is fine.
func TestTornAfterReboot(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "catalog.db")
	db := openAt(t, path)
	loadKeys(t, db, "b", "", []string{"k"}, 0)
	// A copy of the open file is what a crash leaves behind.
	data, err := os.ReadFile(path)
	must(t, err)
	crashed := filepath.Join(dir, "crashed.db")
	must(t, os.WriteFile(crashed, data, 0o600))

	// The copy says "open in this boot": a reopen in the same boot passes.
	old := bootID
	t.Cleanup(func() { bootID = old })
	db2 := openAt(t, crashed)
	if _, ok, err := db2.Get("b", "k"); err != nil || !ok {
		t.Fatalf("same-boot reopen lost data: %v %v", ok, err)
	}
	// Leave it open (another copy) and simulate a reboot.
	data, err = os.ReadFile(crashed)
	must(t, err)
	must(t, db2.Close())
	rebooted := filepath.Join(dir, "rebooted.db")
	must(t, os.WriteFile(rebooted, data, 0o600))
	bootID = func() string { return "another-boot" }
	if _, err := Open(Options{Path: rebooted}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open after reboot = %v, want ErrCorrupt", err)
	}
	if b, err := os.ReadFile(rebooted); err != nil || !slices.Equal(b, data) {
		t.Fatal("refused file was changed")
	}
	// A clean Close is fine in any boot.
	must(t, db.Close())
	openAt(t, path)
}

// TestCloseDuringLoad: Loads in progress fail once the catalog closes.
func TestCloseDuringLoad(t *testing.T) {
	db := openT(t)
	entries := []Entry{entryOf("a", 0), entryOf("b", 0)}
	i := 0
	next := func() (Entry, bool, error) {
		if i == 1 {
			must(t, db.Close())
		}
		if i == len(entries) {
			return Entry{}, false, nil
		}
		i++
		return entries[i-1], true, nil
	}
	if err := db.Load("b", "", t0, next, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Load = %v, want ErrClosed", err)
	}
}

// TestDropDuringLoad: dropping the bucket aborts its running Load.
func TestDropDuringLoad(t *testing.T) {
	db := openT(t)
	loadKeys(t, db, "b", "", []string{"x"}, 0)
	next := func() (Entry, bool, error) {
		must(t, db.DropBucket("b"))
		return Entry{}, false, nil
	}
	if err := db.Load("b", "", t0, next, nil); !errors.Is(err, ErrAborted) {
		t.Fatalf("Load = %v, want ErrAborted", err)
	}
	if _, ok := db.Covered("b", ""); ok {
		t.Fatal("dropped bucket covered")
	}
	if n, _, _ := db.Count("b", ""); n != 0 {
		t.Fatalf("dropped bucket holds %d", n)
	}
}

// TestConcurrent lists and gets while a Load and Puts run (for -race and
// for page consistency: each page is in order and from one snapshot).
func TestConcurrent(t *testing.T) {
	db := openT(t)
	var keys []string
	for i := range 3 * batchSize {
		keys = append(keys, fmt.Sprintf("d%d/k%05d", i%4, i))
	}
	loadKeys(t, db, "b", "", keys, 0)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				opts := store.ListOptions{MaxKeys: 500, Delimiter: []string{"", "/"}[n%2], Prefix: []string{"", "d1/"}[g%2]}
				page, err := db.List("b", opts)
				if err == nil {
					_, _, err = db.Get("b", keys[n%len(keys)])
				}
				if err == nil && !slices.IsSorted(pageStrings(page)) {
					err = fmt.Errorf("page out of order")
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 200; i++ {
			if err := db.Put("b", entryOf(fmt.Sprintf("d9/p%03d", i), 1)); err != nil {
				errs <- err
				return
			}
		}
	}()
	loadKeys(t, db, "b", "", keys, 1)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if e, ok, err := db.Get("b", keys[7]); err != nil || !ok || !sameEntry(e, entryOf(keys[7], 1)) {
		t.Fatalf("after reload Get = %+v %v %v", e, ok, err)
	}
}
