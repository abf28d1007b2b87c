// Tests of key and bucket validation: every key that could leave its
// bucket or collide with the origin's own files is refused.
package hdfs

import (
	"errors"
	"strings"
	"testing"

	"github.com/granary-dev/granary/store"
)

func TestValidKey(t *testing.T) {
	good := []string{"a", "a/b", "dir/", "a/b/c/", "with space", "ünï/文件", "x.granary-tmp", "a:b", "..a", "a..", strings.Repeat("k", 255)}
	for _, k := range good {
		if err := validKey(k); err != nil {
			t.Errorf("validKey(%q) = %v, want nil", k, err)
		}
	}
	bad := []string{
		"", "/", "/a", "a//b", "./a", "a/./b", "a/..", "../a", "a/../b", "a/b//", "nul\x00",
		".granary-tmp-1", "a/.granary-folder", "a/.granary-x/b", "\xff\xfe",
		strings.Repeat("k", 256), strings.Repeat("a/", 600),
	}
	for _, k := range bad {
		if err := validKey(k); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("validKey(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
}

func TestValidBucket(t *testing.T) {
	for _, b := range []string{"abc", "my-bucket", "a.b.c", "st-0123456789ab"} {
		if err := store.CheckBucketName(b); err != nil {
			t.Errorf("store.CheckBucketName(%q) = %v", b, err)
		}
	}
	for _, b := range []string{"ab", ".granary", "-abc", "abc-", "a..b", "ABC", "a_b", "10.0.0.1", "xn--abc", strings.Repeat("a", 64), "a/b"} {
		if err := store.CheckBucketName(b); !errors.Is(err, store.ErrInvalidBucketName) {
			t.Errorf("store.CheckBucketName(%q) = %v, want ErrInvalidBucketName", b, err)
		}
	}
}

func TestListableName(t *testing.T) {
	for name, want := range map[string]bool{
		"a": true, "file.txt": true, ".hidden": true,
		".granary-tmp-abc": false, folderMarker: false, "": false, "..": false, "\xff": false,
	} {
		if got := listableName(name); got != want {
			t.Errorf("listableName(%q) = %v, want %v", name, got, want)
		}
	}
}
