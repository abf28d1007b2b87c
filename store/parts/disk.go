// On-disk records of the parts store and their durable writing: the
// upload description, part infos and the seal, and the recovery Open runs
// over what an earlier process (perhaps a crashed one) left.
package parts

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/granary-dev/granary/store"
)

const (
	dirPerm     = store.PrivateDirMode
	filePerm    = store.PrivateFileMode
	descName    = "upload.json"
	sealName    = "sealed.json"
	partPrefix  = "part-"
	infoSuffix  = ".json"
	tmpPrefix   = "tmp-"
	newPrefix   = ".new-"
	trashPrefix = ".trash-"
)

// description is upload.json.
type description struct {
	Bucket    string           `json:"bucket"`
	Key       string           `json:"key"`
	Meta      store.ObjectMeta `json:"meta"`
	Initiated int64            `json:"initiated"` // UnixNano
}

// partRec is part-<n>.json, and one entry of sealed.json.
type partRec struct {
	Number int    `json:"number"`
	File   string `json:"file"` // data file name in the upload directory
	ETag   string `json:"etag"` // hex MD5, lower case
	Size   int64  `json:"size"`
	MTime  int64  `json:"mtime"` // UnixNano of the put
}

func (p partRec) info() store.PartInfo {
	return store.PartInfo{Number: p.Number, ETag: p.ETag, Size: p.Size, LastModified: time.Unix(0, p.MTime).UTC()}
}

// sealRec is sealed.json: the parts of the completion, in order.
type sealRec struct {
	ETag  string    `json:"etag"`
	Parts []partRec `json:"parts"`
}

func infoName(n int) string { return partPrefix + strconv.Itoa(n) + infoSuffix }

// dataName returns a new data file name for part n.
func dataName(n int) string { return partPrefix + strconv.Itoa(n) + "-" + randHex(8) }

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *Store) path(elem ...string) string {
	return filepath.Join(append([]string{s.dir}, elem...)...)
}

// writeNew creates u's directory durably: upload.json is written inside
// .new-<id>, and the directory is renamed to <id> once that is on disk.
func (s *Store) writeNew(u *upload) error {
	tmpDir := s.path(newPrefix + u.id)
	if err := os.Mkdir(tmpDir, dirPerm); err != nil {
		return fmt.Errorf("parts: create upload: %w", err)
	}
	d := description{Bucket: u.bucket, Key: u.key, Meta: u.meta, Initiated: u.initiated.UnixNano()}
	err := s.writeFile(filepath.Join(tmpDir, descName), d)
	if err == nil {
		err = s.syncDir(tmpDir)
	}
	if err == nil {
		err = os.Rename(tmpDir, s.path(u.id))
	}
	if err == nil {
		err = s.syncDir(s.dir)
	}
	if err != nil {
		os.RemoveAll(tmpDir)
		os.RemoveAll(s.path(u.id)) // renamed, but not durably: undo
		return fmt.Errorf("parts: create upload: %w", err)
	}
	return nil
}

// writeFile writes v as JSON to a new file name, fsynced unless NoSync.
func (s *Store) writeFile(name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && !s.noSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
	}
	return err
}

// replaceFile durably sets dir/name to v as JSON: a temp file, renamed over
// name, then the directory synced.
func (s *Store) replaceFile(dir, name string, v any) error {
	tmp := filepath.Join(dir, tmpPrefix+randHex(12))
	if err := s.writeFile(tmp, v); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		os.Remove(tmp)
		return err
	}
	return s.syncDir(dir)
}

// syncDir fsyncs a directory so creates and renames in it are durable.
func (s *Store) syncDir(dir string) error {
	if s.noSync {
		return nil
	}
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func readJSON(name string, v any) error {
	data, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// load indexes the uploads in Dir, finishing what a crash interrupted:
// .new- and .trash- directories are removed, and so are temp files and
// data files that no record names. A directory whose description cannot
// be read is left alone (and not indexed): it is no upload of ours.
func (s *Store) load() error {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("parts: read %s: %w", s.dir, err)
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, newPrefix) || strings.HasPrefix(name, trashPrefix) {
			os.RemoveAll(s.path(name))
			continue
		}
		nano, ok := idNano(name)
		if !ok || !e.IsDir() {
			continue
		}
		u, err := s.loadUpload(name)
		if err != nil {
			continue
		}
		s.uploads[name] = u
		s.lastNano = max(s.lastNano, nano)
	}
	return nil
}

// loadUpload reads one upload directory and tidies it.
func (s *Store) loadUpload(id string) (*upload, error) {
	dir := s.path(id)
	var d description
	if err := readJSON(filepath.Join(dir, descName), &d); err != nil {
		return nil, err
	}
	u := &upload{
		id: id, bucket: d.Bucket, key: d.Key, meta: d.Meta,
		initiated: time.Unix(0, d.Initiated).UTC(),
		lock:      make(chan struct{}, 1), parts: make(map[int]partRec),
	}
	names, err := readNames(dir)
	if err != nil {
		return nil, err
	}
	var seal sealRec
	switch err := readJSON(filepath.Join(dir, sealName), &seal); {
	case err == nil:
		u.sealed = &seal
	case !os.IsNotExist(err):
		return nil, err
	}
	keep := map[string]bool{descName: true, sealName: true}
	if u.sealed != nil {
		for _, p := range u.sealed.Parts {
			keep[p.File] = true
		}
	} else {
		s.loadParts(u, dir, names, keep)
	}
	for _, n := range names {
		if !keep[n] {
			os.Remove(filepath.Join(dir, n))
		}
	}
	return u, nil
}

// loadParts indexes the committed parts of an open upload, marking their
// info and data files in keep. An info whose data file is missing or of
// another size is dropped.
func (s *Store) loadParts(u *upload, dir string, names []string, keep map[string]bool) {
	for _, n := range names {
		num, ok := infoNumber(n)
		if !ok {
			continue
		}
		var p partRec
		if readJSON(filepath.Join(dir, n), &p) != nil || p.Number != num ||
			!strings.HasPrefix(p.File, partPrefix+strconv.Itoa(num)+"-") || strings.ContainsRune(p.File, '/') {
			continue
		}
		fi, err := os.Stat(filepath.Join(dir, p.File))
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != p.Size {
			continue
		}
		u.parts[num] = p
		keep[n], keep[p.File] = true, true
	}
}

// infoNumber returns n if name is part-<n>.json.
func infoNumber(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, partPrefix)
	if !ok {
		return 0, false
	}
	rest, ok = strings.CutSuffix(rest, infoSuffix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || partNumberOK(n) != nil || strconv.Itoa(n) != rest {
		return 0, false
	}
	return n, true
}

func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}
