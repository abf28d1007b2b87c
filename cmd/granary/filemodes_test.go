// File modes under the data directory: after a node has generated its
// credentials, taken write-back and multipart writes, filled its disk tier
// and pinned a prefix, nothing it made there is open to its group or
// others.
package main

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/minio/minio-go/v7"
)

func TestDataDirModes(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data") // the node creates it
	s := startServe(t, map[string]string{"GRANARY_DATA_DIR": data},
		"--write-mode", "write-back", "--ram", "64MiB", "--disk", "256MiB", "--chunk-size", "1MiB")
	creds, err := readCredentialsFile(filepath.Join(data, credentialsFile))
	if err != nil {
		t.Fatal(err)
	}
	env := envMap(map[string]string{"GRANARY_ACCESS_KEY": creds.AccessKey, "GRANARY_SECRET_KEY": creds.SecretKey})
	cl, err := newS3Client("http://"+s.addr, env)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := cl.MakeBucket(ctx, "modes", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	small := bytes.Repeat([]byte("s"), 100<<10)
	large := bytes.Repeat([]byte("L"), 17<<20) // minio-go uploads it in parts
	for key, body := range map[string][]byte{"small": small, "large": large} {
		if _, err := cl.PutObject(ctx, "modes", key, bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
	}
	var out bytes.Buffer
	for _, args := range [][]string{
		{"flush", "--endpoint", "http://" + s.addr, "s3://modes/"},
		{"pin", "--endpoint", "http://" + s.addr, "s3://modes/small"},
	} {
		if code := execute(ctx, args, &out, &out, env); code != exitOK {
			t.Fatalf("%v: exit %d\n%s", args, code, out.String())
		}
	}
	for _, key := range []string{"small", "large"} { // through the tiers
		obj, err := cl.GetObject(ctx, "modes", key, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, obj); err != nil {
			t.Fatal(err)
		}
		obj.Close()
	}
	s.stop(t) // everything on disk, nothing half made
	checkPrivate(t, data)
}

// checkPrivate walks dir and fails on a directory not 0700, or a file
// its group or others may use.
func checkPrivate(t *testing.T, dir string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch mode := fi.Mode().Perm(); {
		case d.IsDir() && mode != 0o700:
			t.Errorf("directory %s has mode %#o, want 0700", p, mode)
		case !d.IsDir() && mode&0o077 != 0:
			t.Errorf("file %s has mode %#o: its group or others may use it", p, mode)
		case !d.IsDir():
			files++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 5 {
		t.Fatalf("only %d files under %s: the node wrote less than the test meant it to", files, dir)
	}
}
