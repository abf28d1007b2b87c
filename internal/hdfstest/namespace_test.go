// Namespace tests of the test cluster through the real colinmarc/hdfs/v2
// client over TCP: stat, mkdir, listing with paging, rename, remove, and
// the errors the client reports.
package hdfstest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sort"
	"syscall"
	"testing"
	"time"

	hdfs "github.com/colinmarc/hdfs/v2"
	"github.com/granary-dev/granary/internal/hdfstest"
)

// callBound bounds every connection a test client opens: past it, any
// blocked call fails instead of hanging the test.
const callBound = 2 * time.Minute

// noLeaks fails the test if goroutines started during it are still
// running shortly after its cleanups. Register it first: cleanups run last
// registered first, so it runs after clients close and servers stop.
func noLeaks(t *testing.T) {
	base := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > base {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<16)
				t.Errorf("goroutines leaked: %d > %d\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(10 * time.Millisecond) // polling a bounded wait, not readiness
		}
	})
}

// dial opens connections with a deadline of callBound.
func dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return c, c.SetDeadline(time.Now().Add(callBound))
}

// client connects user to the namenodes and closes at test end.
func client(t *testing.T, user string, namenodes ...string) *hdfs.Client {
	t.Helper()
	c, err := hdfs.NewClient(hdfs.ClientOptions{
		Addresses: namenodes, User: user,
		NamenodeDialFunc: dial, DatanodeDialFunc: dial,
	})
	if err != nil {
		t.Fatalf("hdfs client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// start runs a cluster and a client for user "granary".
func start(t *testing.T) (*hdfstest.Server, *hdfs.Client) {
	noLeaks(t)
	s := hdfstest.Start(t, hdfstest.Options{})
	return s, client(t, "granary", s.NameNode)
}

// exception is the Java exception class behind err, or "".
func exception(err error) string {
	var he hdfs.Error
	if errors.As(err, &he) {
		return he.Exception()
	}
	return ""
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestStatAndMkdir(t *testing.T) {
	_, c := start(t)
	must(t, c.MkdirAll("/a/b/c", 0o755))
	must(t, c.MkdirAll("/a/b/c", 0o755)) // exists: no error
	fi, err := c.Stat("/a/b")
	must(t, err)
	if !fi.IsDir() || fi.Name() != "b" || fi.Mode() != os.ModeDir|0o755 {
		t.Errorf("stat /a/b: dir=%v name=%q mode=%v", fi.IsDir(), fi.Name(), fi.Mode())
	}
	if fi.(*hdfs.FileInfo).Owner() != "granary" {
		t.Errorf("owner %q, want granary", fi.(*hdfs.FileInfo).Owner())
	}
	if _, err := c.Stat("/a/missing"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stat missing: %v", err)
	}
	if err := c.Mkdir("/a/b", 0o755); !errors.Is(err, os.ErrExist) {
		t.Errorf("mkdir existing: %v", err)
	}
	if err := c.Mkdir("/x/y", 0o755); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("mkdir without parent: %v", err)
	}
	must(t, c.CreateEmptyFile("/a/f"))
	fi, err = c.Stat("/a/f")
	must(t, err)
	if fi.IsDir() || fi.Size() != 0 || fi.Mode() != 0o644 {
		t.Errorf("stat /a/f: dir=%v size=%d mode=%v", fi.IsDir(), fi.Size(), fi.Mode())
	}
	err = c.MkdirAll("/a/f/sub", 0o755)
	if exception(err) != "org.apache.hadoop.fs.ParentNotDirectoryException" {
		t.Errorf("mkdir under a file: %v", err)
	}
	if err := c.Mkdir("/a/f", 0o755); !errors.Is(err, os.ErrExist) {
		t.Errorf("mkdir over a file: %v", err)
	}
}

func TestReadDirPaging(t *testing.T) {
	_, c := start(t)
	const n = 2500 // more than two pages of 1000
	must(t, c.MkdirAll("/big", 0o755))
	var want []string
	for i := range n {
		name := fmt.Sprintf("f%05d", i)
		want = append(want, name)
		if i%500 == 0 {
			must(t, c.Mkdir("/big/"+name, 0o755))
			continue
		}
		must(t, c.CreateEmptyFile("/big/"+name))
	}
	fis, err := c.ReadDir("/big")
	must(t, err)
	var got []string
	for i, fi := range fis {
		got = append(got, fi.Name())
		if fi.IsDir() != (i%500 == 0) {
			t.Errorf("%s: IsDir %v", fi.Name(), fi.IsDir())
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ReadDir: %d names, want %d in order", len(got), len(want))
	}

	// Readdir(k) pages through the same names.
	f, err := c.Open("/big")
	must(t, err)
	defer f.Close()
	var paged []string
	for {
		fis, err := f.Readdir(700)
		if errors.Is(err, io.EOF) {
			break
		}
		must(t, err)
		for _, fi := range fis {
			paged = append(paged, fi.Name())
		}
	}
	if !sort.StringsAreSorted(paged) || len(paged) != n {
		t.Errorf("Readdir(700): %d names, sorted %v", len(paged), sort.StringsAreSorted(paged))
	}
	if _, err := c.ReadDir("/nope"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadDir missing: %v", err)
	}
}

func TestRename(t *testing.T) {
	_, c := start(t)
	must(t, c.MkdirAll("/d/sub", 0o755))
	must(t, c.CreateEmptyFile("/d/a"))
	w, err := c.Create("/d/b")
	must(t, err)
	must(t, w.Close())

	must(t, c.Rename("/d/a", "/d/b")) // overwrites
	if _, err := c.Stat("/d/a"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("old name after rename: %v", err)
	}
	must(t, c.Rename("/d/sub", "/e"))
	if fi, err := c.Stat("/e"); err != nil || !fi.IsDir() {
		t.Errorf("renamed dir: %v", err)
	}
	if err := c.Rename("/d/missing", "/d/x"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("rename missing: %v", err)
	}
	if err := c.Rename("/d/b", "/nodir/x"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("rename into a missing dir: %v", err)
	}
	must(t, c.MkdirAll("/full/x", 0o755))
	if err := c.Rename("/e", "/full"); err == nil {
		t.Error("rename over a non-empty directory succeeded")
	}
}

func TestRemove(t *testing.T) {
	_, c := start(t)
	must(t, c.MkdirAll("/r/s", 0o755))
	must(t, c.CreateEmptyFile("/r/s/f"))
	if err := c.Remove("/r"); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Errorf("remove non-empty dir: %v", err)
	}
	must(t, c.Remove("/r/s/f"))
	must(t, c.Remove("/r/s"))
	must(t, c.MkdirAll("/r/t/u", 0o755))
	must(t, c.RemoveAll("/r"))
	if _, err := c.Stat("/r"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after RemoveAll: %v", err)
	}
	must(t, c.RemoveAll("/r")) // missing: nil
	if err := c.Remove("/r"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("remove missing: %v", err)
	}
}

func TestCreateErrorsAndPermissions(t *testing.T) {
	s, c := start(t)
	must(t, c.CreateEmptyFile("/f"))
	if _, err := c.Create("/f"); !errors.Is(err, os.ErrExist) {
		t.Errorf("create existing: %v", err)
	}
	if _, err := c.CreateFile("/f", 1, 1<<20, 0o644); !errors.Is(err, os.ErrExist) {
		t.Errorf("namenode create existing: %v", err)
	}
	if _, err := c.CreateFile("/nodir/f", 1, 1<<20, 0o644); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("create without parent: %v", err)
	}
	if _, err := c.CreateFile("/f/g", 1, 1<<20, 0o644); exception(err) != "org.apache.hadoop.fs.ParentNotDirectoryException" {
		t.Errorf("create under a file: %v", err)
	}

	admin := client(t, "hdfs", s.NameNode)
	must(t, admin.MkdirAll("/locked", 0o755))
	must(t, admin.MkdirAll("/private", 0o700))
	if _, err := c.CreateFile("/locked/x", 1, 1<<20, 0o644); !errors.Is(err, os.ErrPermission) {
		t.Errorf("create in another user's 0755 dir: %v", err)
	}
	if _, err := c.ReadDir("/private"); !errors.Is(err, os.ErrPermission) {
		t.Errorf("list another user's 0700 dir: %v", err)
	}
	if _, err := c.ReadDir("/locked"); err != nil {
		t.Errorf("list another user's 0755 dir: %v", err)
	}
	must(t, admin.Chmod("/locked", 0o777))
	must(t, c.CreateEmptyFile("/locked/x"))
}
