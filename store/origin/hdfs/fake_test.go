// Test doubles of the pure-logic tests: file statuses and a directory tree
// built from a key set, read through the dirReader interface.
package hdfs

import (
	"context"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// fakeInfo is an os.FileInfo with a file ID, as the client's statuses have.
type fakeInfo struct {
	name  string
	size  int64
	mtime time.Time
	dir   bool
	id    uint64
}

func (f fakeInfo) Name() string       { return f.name }
func (f fakeInfo) Size() int64        { return f.size }
func (f fakeInfo) ModTime() time.Time { return f.mtime }
func (f fakeInfo) IsDir() bool        { return f.dir }
func (f fakeInfo) Sys() any           { return fakeStatus{id: f.id} }
func (f fakeInfo) Mode() fs.FileMode {
	if f.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}

// fakeStatus stands for the client's status proto (GetFileId only).
type fakeStatus struct{ id uint64 }

func (s fakeStatus) GetFileId() uint64 { return s.id }

// fakeTree is a directory tree: paths relative to the bucket ("a/b" for a
// file, "a/" for a directory), in any order. It counts the directories
// read.
type fakeTree struct {
	mu    sync.Mutex
	dirs  map[string][]os.FileInfo // "" or "a/b/" -> children (unsorted)
	reads map[string]int           // guarded by mu
}

// newFakeTree builds a tree holding keys as files ("dir/" keys become a
// directory with a folder marker) and extra, which may name empty
// directories ("x/y/") or stray files.
func newFakeTree(keys []string, extra ...string) *fakeTree {
	t := &fakeTree{dirs: map[string][]os.FileInfo{"": nil}, reads: map[string]int{}}
	for i, k := range append(slices.Clone(keys), extra...) {
		if strings.HasSuffix(k, "/") && slices.Contains(keys, k) {
			k += folderMarker
		}
		t.add(k, uint64(i+1))
	}
	return t
}

// add puts path p (a file, or a directory if it ends in "/") and its
// parent directories into the tree.
func (t *fakeTree) add(p string, id uint64) {
	segs := strings.Split(p, "/")
	dir := ""
	for i, s := range segs {
		if s == "" {
			return
		}
		isDir := i < len(segs)-1
		if !slices.ContainsFunc(t.dirs[dir], func(fi os.FileInfo) bool { return fi.Name() == s }) {
			fi := fakeInfo{name: s, size: int64(len(p)), mtime: time.Unix(1700000000, int64(id)*1e6), dir: isDir, id: id}
			// Namenodes list by name; scramble it to prove the walk sorts.
			t.dirs[dir] = append([]os.FileInfo{fi}, t.dirs[dir]...)
		}
		if isDir {
			dir += s + "/"
			if _, ok := t.dirs[dir]; !ok {
				t.dirs[dir] = nil
			}
		}
	}
}

func (t *fakeTree) readDir(ctx context.Context, dir string) ([]os.FileInfo, error) {
	t.mu.Lock()
	t.reads[dir]++
	t.mu.Unlock()
	return slices.Clone(t.dirs[dir]), nil
}
