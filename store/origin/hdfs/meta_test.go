// Tests of object identity: the version ETag and the records that carry
// metadata and multipart ETags.
package hdfs

import (
	"encoding/hex"
	"maps"
	"testing"
	"time"

	"github.com/granary-dev/granary/store"
)

func TestVersionETag(t *testing.T) {
	mt := time.Unix(1700000000, 123e6)
	base := versionETag(100, mt, 7)
	if b, err := hex.DecodeString(base); err != nil || len(b) != 16 {
		t.Fatalf("ETag %q is not 32 hex digits", base)
	}
	if versionETag(100, mt, 7) != base {
		t.Fatal("ETag not stable")
	}
	for name, other := range map[string]string{
		"size":  versionETag(101, mt, 7),
		"mtime": versionETag(100, mt.Add(time.Millisecond), 7),
		"id":    versionETag(100, mt, 8),
		"no id": versionETag(100, mt, 0),
	} {
		if other == base {
			t.Errorf("changing the %s kept the ETag", name)
		}
	}
	fi := fakeInfo{name: "k", size: 100, mtime: mt, id: 7}
	if fileID(fi) != 7 || fileETag(fi) != base {
		t.Fatalf("fileETag(status) = %s (id %d), want %s", fileETag(fi), fileID(fi), base)
	}
}

func TestObjectInfoRecord(t *testing.T) {
	fi := fakeInfo{name: "k", size: 10, mtime: time.Unix(1700000000, 0), id: 3}
	plain := objectInfo("b", "k", fi, nil)
	if plain.ETag != fileETag(fi) || plain.ContentType != store.DefaultContentType || plain.Size != 10 {
		t.Fatalf("info without record = %+v", plain)
	}
	meta := store.ObjectMeta{ContentType: "text/plain", User: map[string]string{"a": "1"}}
	r := &record{Meta: meta, ETag: "0123456789abcdef0123456789abcdef-2", Version: fileETag(fi)}
	got := objectInfo("b", "k", fi, r)
	if got.ETag != r.ETag || got.ContentType != "text/plain" || !maps.Equal(got.User, meta.User) {
		t.Fatalf("info with a current record = %+v", got)
	}
	// The file changed at the origin (an append keeps its xattrs): its own
	// version wins, the metadata stays.
	appended := fi
	appended.size, appended.mtime = 20, fi.mtime.Add(time.Second)
	got = objectInfo("b", "k", appended, r)
	if got.ETag != fileETag(appended) || got.ContentType != "text/plain" {
		t.Fatalf("info with a stale record = %+v, want ETag %s", got, fileETag(appended))
	}
}

func TestParseRecord(t *testing.T) {
	for _, v := range []string{"", "not json", "[1,2]"} {
		if parseRecord(v) != nil {
			t.Errorf("parseRecord(%q) != nil", v)
		}
	}
	r := parseRecord(`{"meta":{"ContentType":"x/y"},"etag":"e-1","version":"v"}`)
	if r == nil || r.Meta.ContentType != "x/y" || r.ETag != "e-1" || r.Version != "v" {
		t.Fatalf("parseRecord = %+v", r)
	}
}

func TestIsDefaultMeta(t *testing.T) {
	if !isDefaultMeta(store.ObjectMeta{}) || !isDefaultMeta(store.ObjectMeta{ContentType: store.DefaultContentType}) {
		t.Error("default meta needs a record")
	}
	for _, m := range []store.ObjectMeta{{ContentType: "a/b"}, {CacheControl: "x"}, {User: map[string]string{"k": "v"}}} {
		if isDefaultMeta(m) {
			t.Errorf("%+v reported default", m)
		}
	}
}
