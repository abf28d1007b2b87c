// The on-disk namespace: HDFS directories are real directories under
// Dir/ns, an HDFS file is a JSON manifest at its path, and counters for
// block and file IDs persist in Dir/state.json. Callers hold Server.mu.
package namenode

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/granary-dev/granary/internal/hdfstest/blocks"
)

// dirMetaName is the reserved entry holding a directory's owner, group
// and permission. It never appears in listings and cannot be created.
const dirMetaName = ".hdfsd-dir.json"

// blockRec is one block of a file.
type blockRec struct {
	ID       uint64 `json:"id"`
	Len      uint64 `json:"len"`
	GenStamp uint64 `json:"genstamp"`
}

// manifest is an HDFS file. Length is the sum of the block lengths.
// Complete is false while a writer (Client) holds the lease.
type manifest struct {
	ID          uint64     `json:"id"`
	Blocks      []blockRec `json:"blocks"`
	Length      uint64     `json:"length"`
	MTime       int64      `json:"mtime"` // milliseconds since the epoch
	ATime       int64      `json:"atime"`
	Perm        uint32     `json:"permission"`
	Owner       string     `json:"owner"`
	Group       string     `json:"group"`
	BlockSize   uint64     `json:"blockSize"`
	Replication uint32     `json:"replication"`
	Complete    bool       `json:"complete"`
	Client      string     `json:"client,omitempty"`
	// XAttrs are the file's extended attributes by "<namespace>.<name>".
	XAttrs map[string]string `json:"xattrs,omitempty"`
}

// dirMeta is a directory's ownership and permission.
type dirMeta struct {
	Perm  uint32 `json:"permission"`
	Owner string `json:"owner"`
	Group string `json:"group"`
}

// counters are the next IDs to hand out.
type counters struct {
	NextBlock uint64 `json:"nextBlock"`
	NextFile  uint64 `json:"nextFile"`
}

// inode is a resolved path: a directory (file == nil) or a file.
type inode struct {
	local string // path on disk
	file  *manifest
	dir   dirMeta
	mtime time.Time // directories: the real directory's mtime
}

type namespace struct {
	root, tmp, statePath string
	store                *blocks.Store
	dirOwner             string
	ctr                  counters
}

func openNamespace(dir string, store *blocks.Store, dirOwner string) (*namespace, error) {
	ns := &namespace{
		root:      filepath.Join(dir, "ns"),
		tmp:       filepath.Join(dir, "tmp"),
		statePath: filepath.Join(dir, "state.json"),
		store:     store,
		dirOwner:  dirOwner,
		ctr:       counters{NextBlock: 1 << 30, NextFile: 16386},
	}
	for _, d := range []string{ns.root, ns.tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("namenode: %w", err)
		}
	}
	b, err := os.ReadFile(ns.statePath)
	if err == nil {
		err = json.Unmarshal(b, &ns.ctr)
	} else if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("namenode: state: %w", err)
	}
	return ns, nil
}

// clean turns an HDFS path into its absolute, cleaned form and its
// components; relative paths are taken from the root.
func clean(p string) (string, []string, *remoteError) {
	p = path.Clean("/" + p)
	if p == "/" {
		return p, nil, nil
	}
	parts := strings.Split(p[1:], "/")
	for _, c := range parts {
		if c == dirMetaName {
			return "", nil, rerr(exInvalidPath, "Invalid path name %s: %s is reserved", p, dirMetaName)
		}
	}
	return p, parts, nil
}

// local is the on-disk path of a cleaned HDFS path.
func (ns *namespace) local(p string) string {
	return filepath.Join(ns.root, filepath.FromSlash(p))
}

// lookup resolves an HDFS path. A missing path is FileNotFoundException; a
// path through a file is ParentNotDirectoryException.
func (ns *namespace) lookup(p string) (*inode, *remoteError) {
	cp, _, re := clean(p)
	if re != nil {
		return nil, re
	}
	loc := ns.local(cp)
	st, err := os.Stat(loc)
	switch {
	case errors.Is(err, syscall.ENOTDIR):
		return nil, rerr(exParentNotDir, "a parent of %s is a file", cp)
	case errors.Is(err, fs.ErrNotExist):
		return nil, rerr(exFileNotFound, "File does not exist: %s", cp)
	case err != nil:
		return nil, rerr(exIO, "%v", err)
	}
	if st.IsDir() {
		meta, err := ns.readDirMeta(loc)
		if err != nil {
			return nil, rerr(exIO, "%v", err)
		}
		return &inode{local: loc, dir: meta, mtime: st.ModTime()}, nil
	}
	m := &manifest{}
	b, err := os.ReadFile(loc)
	if err == nil {
		err = json.Unmarshal(b, m)
	}
	if err != nil {
		return nil, rerr(exIO, "manifest of %s: %v", cp, err)
	}
	return &inode{local: loc, file: m}, nil
}

// readDirMeta reads a directory's metadata; a directory without any is
// owned by dirOwner with mode 0777.
func (ns *namespace) readDirMeta(loc string) (dirMeta, error) {
	meta := dirMeta{Perm: 0o777, Owner: ns.dirOwner, Group: "supergroup"}
	b, err := os.ReadFile(filepath.Join(loc, dirMetaName))
	if errors.Is(err, fs.ErrNotExist) {
		return meta, nil
	}
	if err != nil {
		return meta, err
	}
	return meta, json.Unmarshal(b, &meta)
}

// writeJSON publishes v at dst atomically (temp file in ns.tmp, rename).
func (ns *namespace) writeJSON(dst string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(ns.tmp, "m-*")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), dst)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// nextBlock and nextFile hand out IDs, persisting the counter first so an
// ID is never reused across restarts.
func (ns *namespace) nextBlock() (uint64, error) {
	id := ns.ctr.NextBlock
	ns.ctr.NextBlock++
	return id, ns.writeJSON(ns.statePath, ns.ctr)
}

func (ns *namespace) nextFile() (uint64, error) {
	id := ns.ctr.NextFile
	ns.ctr.NextFile++
	return id, ns.writeJSON(ns.statePath, ns.ctr)
}

// dropBlocks deletes the block files of m; missing ones are ignored.
func (ns *namespace) dropBlocks(m *manifest) {
	for _, b := range m.Blocks {
		os.Remove(ns.store.Path(b.ID))
		os.Remove(ns.store.TempPath(b.ID))
	}
}

// removeTree deletes loc (a manifest or a directory tree) and the blocks of
// every file in it.
func (ns *namespace) removeTree(loc string) error {
	err := filepath.WalkDir(loc, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == dirMetaName {
			return err
		}
		var m manifest
		if b, rerr := os.ReadFile(p); rerr == nil && json.Unmarshal(b, &m) == nil {
			ns.dropBlocks(&m)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return os.RemoveAll(loc)
}

// isEmptyDir reports whether a directory has no entries besides its
// metadata.
func isEmptyDir(loc string) (bool, error) {
	ents, err := os.ReadDir(loc)
	if err != nil {
		return false, err
	}
	for _, e := range ents {
		if e.Name() != dirMetaName {
			return false, nil
		}
	}
	return true, nil
}

func nowMillis() int64 { return time.Now().UnixMilli() }
