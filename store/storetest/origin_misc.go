// Origin conformance cases for folder keys, unusual key characters,
// server-side copy and concurrent use.
package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/granary-dev/granary/store"
)

// testFolderKeys covers zero-byte keys ending in "/", which S3 consoles
// create for "folders". An origin that cannot store them must refuse them
// with ErrInvalidKey (the case is then skipped).
func testFolderKeys(t *testing.T, o store.Origin) {
	b := newBucket(t, o)
	ctx := opCtx(t)
	dir, err := o.Put(ctx, b, "dir/", bytes.NewReader(nil), 0, store.ObjectMeta{})
	if errors.Is(err, store.ErrInvalidKey) {
		t.Skipf("origin does not store folder objects: %v", err)
	}
	if err != nil {
		t.Fatalf("Put(dir/): %v", err)
	}
	putBytes(t, o, b, "dir/file", []byte("f"), store.ObjectMeta{})
	putBytes(t, o, b, "lonely/", nil, store.ObjectMeta{})
	if st := mustStat(t, o, b, "dir/"); st.Size != 0 || st.ETag != dir.ETag {
		t.Fatalf("Stat(dir/) = %+v, want size 0 ETag %s", st, dir.ETag)
	}
	assertKeys(t, o, b, "dir/", "dir/file", "lonely/")
	got := fmt.Sprint(ListAll(t, o, b, store.ListOptions{Prefix: "dir/", Delimiter: "/"}))
	if got != "[dir/ dir/file]" {
		t.Fatalf("List(prefix dir/, delimiter /) = %s, want [dir/ dir/file]", got)
	}
	got = fmt.Sprint(ListAll(t, o, b, store.ListOptions{Delimiter: "/"}))
	if got != "[dir/(prefix) lonely/(prefix)]" {
		t.Fatalf("List(delimiter /) = %s, want [dir/(prefix) lonely/(prefix)]", got)
	}
	mustDelete(t, o, b, "dir/file")
	mustStat(t, o, b, "dir/") // the folder object outlives its last child
	mustDelete(t, o, b, "dir/")
	wantNoKey(t, o, b, "dir/")
	assertKeys(t, o, b, "lonely/")
	if rc, info, err := o.Get(ctx, b, "lonely/", store.ReadRange{Length: -1}); err != nil || info.Size != 0 {
		t.Fatalf("Get(lonely/) = %+v, %v", info, err)
	} else {
		rc.Close()
	}
}

// specialKeys hold characters that break naive URL or path handling.
var specialKeys = []string{
	"with space.txt", "ünïcödé/файл-文件.bin", "plus+sign", "percent%20literal", "question?mark",
	"hash#tag", "amp&eq=1", "semi;colon", "tilde~", "brackets[1]", "quote'\"", "star*", "colon:x",
	"emoji-😀", "tab\there", "dir with space/and+plus",
	// White space only, or at a segment's edge: S3 accepts them all.
	" ", "\t", " lead", "trail ", "sp/ /x",
}

func testSpecialKeys(t *testing.T, o store.Origin) {
	b := newBucket(t, o)
	for _, key := range specialKeys {
		putBytes(t, o, b, key, []byte(key), store.ObjectMeta{})
	}
	for _, key := range specialKeys {
		if st := mustStat(t, o, b, key); st.Key != key || st.Size != int64(len(key)) {
			t.Errorf("Stat(%q) = key %q size %d", key, st.Key, st.Size)
		}
		if got, _ := getBytes(t, o, b, key, store.ReadRange{Length: -1}); string(got) != key {
			t.Errorf("Get(%q) = %q", key, got)
		}
	}
	assertKeys(t, o, b, specialKeys...)
	for _, key := range specialKeys {
		mustDelete(t, o, b, key)
	}
	assertKeys(t, o, b)
}

func testCopy(t *testing.T, o store.Origin) {
	c, ok := o.(store.Copier)
	if !ok {
		t.Skip("origin does not implement store.Copier")
	}
	ctx := opCtx(t)
	b1, b2 := newBucket(t, o), newBucket(t, o)
	data := randomBytes(70000, 5)
	srcMeta := store.ObjectMeta{ContentType: "text/csv", CacheControl: "no-cache", User: map[string]string{"origin": "src"}}
	src := putBytes(t, o, b1, "src", data, srcMeta)

	info, err := c.Copy(ctx, b1, "src", b2, "kept", nil)
	if err != nil {
		t.Fatalf("Copy(nil meta): %v", err)
	}
	got, gi := getBytes(t, o, b2, "kept", store.ReadRange{Length: -1})
	if !bytes.Equal(got, data) || gi.ETag != info.ETag || gi.ContentType != "text/csv" ||
		gi.CacheControl != "no-cache" || !maps.Equal(gi.User, srcMeta.User) {
		t.Fatalf("Copy(nil meta): got %d bytes, info %+v (copy said ETag %s)", len(got), gi, info.ETag)
	}

	newMeta := store.ObjectMeta{ContentType: "application/json", User: map[string]string{"fresh": "yes"}}
	if _, err := c.Copy(ctx, b1, "src", b1, "replaced", &newMeta); err != nil {
		t.Fatalf("Copy(new meta): %v", err)
	}
	st := mustStat(t, o, b1, "replaced")
	if st.ContentType != "application/json" || st.CacheControl != "" || !maps.Equal(st.User, newMeta.User) || st.Size != src.Size {
		t.Fatalf("Copy(new meta): %+v, want type application/json, no cache-control, user %v", st, newMeta.User)
	}
	if again := mustStat(t, o, b1, "src"); again.ETag != src.ETag || again.ContentType != "text/csv" {
		t.Fatalf("Copy changed its source: %+v", again)
	}
	if _, err := c.Copy(ctx, b1, "absent", b2, "x", nil); !errors.Is(err, store.ErrNoSuchKey) {
		t.Errorf("Copy(missing source) = %v, want ErrNoSuchKey", err)
	}
	if _, err := c.Copy(ctx, b1, "src", "st-no-such-bucket-x3", "x", nil); !errors.Is(err, store.ErrNoSuchBucket) {
		t.Errorf("Copy(into a missing bucket) = %v, want ErrNoSuchBucket", err)
	}
}

func testConcurrent(t *testing.T, o store.Origin) {
	b := newBucket(t, o)
	ctx := opCtx(t)
	const workers, perWorker = 8, 6
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				key := fmt.Sprintf("w%d/obj-%d", w, i)
				data := randomBytes(1000*(i+1)+w, byte(w*perWorker+i))
				info, err := o.Put(ctx, b, key, bytes.NewReader(data), int64(len(data)), store.ObjectMeta{})
				if err != nil {
					t.Errorf("Put(%s): %v", key, err)
					return
				}
				rc, gi, err := o.Get(ctx, b, key, store.ReadRange{Length: -1, ETag: info.ETag})
				if err != nil {
					t.Errorf("Get(%s): %v", key, err)
					return
				}
				var buf bytes.Buffer
				_, err = buf.ReadFrom(rc)
				rc.Close()
				if err != nil || !bytes.Equal(buf.Bytes(), data) || gi.ETag != info.ETag {
					t.Errorf("Get(%s): %d bytes, err %v", key, buf.Len(), err)
				}
			}
		})
	}
	wg.Wait()
	var want []string
	for w := range workers {
		for i := range perWorker {
			want = append(want, fmt.Sprintf("w%d/obj-%d", w, i))
		}
	}
	slices.Sort(want)
	assertKeys(t, o, b, want...)
}
