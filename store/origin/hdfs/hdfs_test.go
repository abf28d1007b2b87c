// Tests of the HDFS origin against the test cluster (internal/hdfstest)
// through the real client over TCP: the conformance suite, plus what only
// HDFS can get wrong (a file rewritten at the origin, permissions, standby
// and safe-mode namenodes, unreachable namenodes, temp files).
package hdfs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	hdfsclient "github.com/colinmarc/hdfs/v2"

	"github.com/granary-dev/granary/internal/hdfstest"
	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/storetest"
)

const testTimeout = 30 * time.Second

// newOrigin returns an origin on the cluster's namenodes acting as user,
// closed when the test ends.
func newOrigin(t *testing.T, user, base string, addrs ...string) *Origin {
	t.Helper()
	o, err := New(Options{Addresses: addrs, Base: base, User: user, PartsDir: t.TempDir(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("New(%v): %v", addrs, err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

// rawClient returns a plain client of the cluster, for changes made "at
// the origin", behind Granary's back.
func rawClient(t *testing.T, nn string) *hdfsclient.Client {
	t.Helper()
	c, err := hdfsclient.NewClient(hdfsclient.ClientOptions{Addresses: []string{nn}, User: "hdfs"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func TestConformance(t *testing.T) {
	srv := hdfstest.Start(t, hdfstest.Options{})
	storetest.RunOrigin(t, func(t *testing.T) store.Origin {
		return newOrigin(t, "hdfs", "/granary", srv.NameNode)
	})
}

// TestRewriteIsNewVersion rewrites a file with the plain client: the
// origin must report a new ETag and refuse reads pinned to the old one,
// even when the new content has the same size.
func TestRewriteIsNewVersion(t *testing.T) {
	srv := hdfstest.Start(t, hdfstest.Options{})
	o := newOrigin(t, "hdfs", "/data", srv.NameNode)
	ctx := ctxT(t)
	if err := o.MakeBucket(ctx, "bkt"); err != nil {
		t.Fatal(err)
	}
	old, err := o.Put(ctx, "bkt", "dir/k", strings.NewReader("version one"), 11, store.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	c := rawClient(t, srv.NameNode)
	if err := c.Remove("/data/bkt/dir/k"); err != nil {
		t.Fatal(err)
	}
	w, err := c.Create("/data/bkt/dir/k")
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, "version two")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := o.Stat(ctx, "bkt", "dir/k")
	if err != nil || st.ETag == old.ETag || st.Size != 11 {
		t.Fatalf("Stat after rewrite = %+v, %v; want a new ETag (old %s)", st, err, old.ETag)
	}
	if _, _, err := o.Get(ctx, "bkt", "dir/k", store.ReadRange{Length: -1, ETag: old.ETag}); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("Get with the old ETag = %v, want ErrPreconditionFailed", err)
	}
	rc, _, err := o.Get(ctx, "bkt", "dir/k", store.ReadRange{Length: -1, ETag: st.ETag})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if b, _ := io.ReadAll(rc); string(b) != "version two" {
		t.Fatalf("Get = %q", b)
	}
}

// TestPermissionDenied: a user without write access to a bucket gets
// ErrAccessDenied, and can still read.
func TestPermissionDenied(t *testing.T) {
	srv := hdfstest.Start(t, hdfstest.Options{})
	admin := newOrigin(t, "hdfs", "/p", srv.NameNode)
	ctx := ctxT(t)
	if err := admin.MakeBucket(ctx, "locked"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Put(ctx, "locked", "k", strings.NewReader("x"), 1, store.ObjectMeta{}); err != nil {
		t.Fatal(err)
	}
	if err := rawClient(t, srv.NameNode).Chmod("/p/locked", 0o755); err != nil {
		t.Fatal(err)
	}
	alice := newOrigin(t, "alice", "/p", srv.NameNode)
	if _, err := alice.Put(ctx, "locked", "new", strings.NewReader("y"), 1, store.ObjectMeta{}); !errors.Is(err, store.ErrAccessDenied) {
		t.Fatalf("Put into a read-only bucket = %v, want ErrAccessDenied", err)
	}
	if err := alice.Delete(ctx, "locked", "k"); !errors.Is(err, store.ErrAccessDenied) {
		t.Fatalf("Delete in a read-only bucket = %v, want ErrAccessDenied", err)
	}
	if _, err := alice.Stat(ctx, "locked", "k"); err != nil {
		t.Fatalf("Stat by a reader = %v", err)
	}
}

// TestFailover: the first namenode is a standby; the client must move to
// the active one.
func TestFailover(t *testing.T) {
	active := hdfstest.Start(t, hdfstest.Options{})
	standby := hdfstest.Start(t, hdfstest.Options{Standby: true})
	o := newOrigin(t, "hdfs", "/f", standby.NameNode, active.NameNode)
	ctx := ctxT(t)
	if err := o.MakeBucket(ctx, "bkt"); err != nil {
		t.Fatalf("MakeBucket through a standby then the active namenode: %v", err)
	}
	if _, err := o.Put(ctx, "bkt", "k", strings.NewReader("hello"), 5, store.ObjectMeta{}); err != nil {
		t.Fatal(err)
	}
	rc, _, err := o.Get(ctx, "bkt", "k", store.ReadRange{Length: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if b, _ := io.ReadAll(rc); string(b) != "hello" {
		t.Fatalf("Get = %q", b)
	}
}

// TestOnlyStandby: with no active namenode, New fails with ErrUnavailable.
func TestOnlyStandby(t *testing.T) {
	standby := hdfstest.Start(t, hdfstest.Options{Standby: true})
	_, err := New(Options{Addresses: []string{standby.NameNode}, User: "hdfs", PartsDir: t.TempDir()})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("New(standby only) = %v, want ErrUnavailable", err)
	}
}

// TestSafeMode: mutations fail with ErrUnavailable; reads work.
func TestSafeMode(t *testing.T) {
	srv := hdfstest.Start(t, hdfstest.Options{SafeMode: true})
	o := newOrigin(t, "hdfs", "/", srv.NameNode)
	ctx := ctxT(t)
	if err := o.MakeBucket(ctx, "bkt"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("MakeBucket in safe mode = %v, want ErrUnavailable", err)
	}
	if _, err := o.ListBuckets(ctx); err != nil {
		t.Fatalf("ListBuckets in safe mode = %v", err)
	}
}

// TestUnreachable: no namenode listens: ErrUnavailable, quickly.
func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = New(Options{Addresses: []string{addr}, User: "hdfs", PartsDir: t.TempDir(), DialTimeout: time.Second})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("New(nothing listening) = %v, want ErrUnavailable", err)
	}
}

// TestFailedPutLeavesNoTemp: a failed body leaves neither the object nor
// a temp file, and temp files never list.
func TestFailedPutLeavesNoTemp(t *testing.T) {
	srv := hdfstest.Start(t, hdfstest.Options{})
	o := newOrigin(t, "hdfs", "/t", srv.NameNode)
	ctx := ctxT(t)
	if err := o.MakeBucket(ctx, "bkt"); err != nil {
		t.Fatal(err)
	}
	_, err := o.Put(ctx, "bkt", "d/k", bytes.NewReader(make([]byte, 10)), 100, store.ObjectMeta{})
	if !errors.Is(err, store.ErrIncompleteBody) {
		t.Fatalf("short Put = %v", err)
	}
	fis, err := rawClient(t, srv.NameNode).ReadDir("/t/bkt/d")
	if err != nil {
		t.Fatal(err)
	}
	for _, fi := range fis {
		t.Errorf("left behind: %s", fi.Name())
	}
	if _, err := o.Put(ctx, "bkt", "d/.granary-tmp-x", strings.NewReader("x"), 1, store.ObjectMeta{}); !errors.Is(err, store.ErrInvalidKey) {
		t.Fatalf("Put of a reserved name = %v, want ErrInvalidKey", err)
	}
}

// TestDeleteKeepsDirectories: Delete never prunes parents.
func TestDeleteKeepsDirectories(t *testing.T) {
	srv := hdfstest.Start(t, hdfstest.Options{})
	o := newOrigin(t, "hdfs", "/d", srv.NameNode)
	ctx := ctxT(t)
	if err := o.MakeBucket(ctx, "bkt"); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Put(ctx, "bkt", "a/b/c", strings.NewReader("x"), 1, store.ObjectMeta{}); err != nil {
		t.Fatal(err)
	}
	if err := o.Delete(ctx, "bkt", "a/b/c"); err != nil {
		t.Fatal(err)
	}
	fi, err := rawClient(t, srv.NameNode).Stat("/d/bkt/a/b")
	if err != nil || !fi.IsDir() {
		t.Fatalf("parent after Delete: %v, %v; want the directory kept", fi, err)
	}
	if err := o.RemoveBucket(ctx, "bkt"); err != nil {
		t.Fatalf("RemoveBucket with only empty directories left = %v", err)
	}
}

// TestReplacedWhileOpening replaces a file between a read's open and its
// block lookup: the read fails with ErrPreconditionFailed rather than
// return the new bytes under the old version's info.
func TestReplacedWhileOpening(t *testing.T) {
	srv := hdfstest.Start(t, hdfstest.Options{})
	o := newOrigin(t, "hdfs", "/data", srv.NameNode)
	ctx := ctxT(t)
	if err := o.MakeBucket(ctx, "bkt"); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Put(ctx, "bkt", "k", strings.NewReader("version one"), 11, store.ObjectMeta{}); err != nil {
		t.Fatal(err)
	}
	c := rawClient(t, srv.NameNode)
	afterOpen = func() {
		if err := c.Remove("/data/bkt/k"); err != nil {
			t.Error(err)
		}
		w, err := c.Create("/data/bkt/k")
		if err == nil {
			io.WriteString(w, "version two")
			err = w.Close()
		}
		if err != nil {
			t.Error(err)
		}
	}
	defer func() { afterOpen = nil }()
	rc, info, err := o.Get(ctx, "bkt", "k", store.ReadRange{Length: -1})
	if err == nil {
		b, _ := io.ReadAll(rc)
		rc.Close()
		t.Fatalf("Get = %q with info %+v, want ErrPreconditionFailed", b, info)
	}
	if !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("Get = %v, want ErrPreconditionFailed", err)
	}
}

// TestReadersAreGivenBack reads more objects than the origin has readers'
// clients, one after another, with and without reading them to the end,
// and with failures: every read gives its client back (a lost one would
// leave a later read waiting until its context ends).
func TestReadersAreGivenBack(t *testing.T) {
	srv := hdfstest.Start(t, hdfstest.Options{})
	o, err := New(Options{Addresses: []string{srv.NameNode}, Base: "/r", User: "hdfs", PartsDir: t.TempDir(), Readers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	ctx := ctxT(t)
	if err := o.MakeBucket(ctx, "bkt"); err != nil {
		t.Fatal(err)
	}
	put, err := o.Put(ctx, "bkt", "k", strings.NewReader("some bytes"), 10, store.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		rc, _, err := o.Get(ctx, "bkt", "k", store.ReadRange{Length: -1})
		if err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		if i%2 == 0 {
			if b, err := io.ReadAll(rc); err != nil || string(b) != "some bytes" {
				t.Fatalf("read %d = %q, %v", i, b, err)
			}
		}
		rc.Close()
		if _, _, err := o.Get(ctx, "bkt", "missing", store.ReadRange{Length: -1}); !errors.Is(err, store.ErrNoSuchKey) {
			t.Fatalf("missing key: %v", err)
		}
		if _, _, err := o.Get(ctx, "bkt", "k", store.ReadRange{Length: -1, ETag: "other"}); !errors.Is(err, store.ErrPreconditionFailed) {
			t.Fatalf("other version: %v", err)
		}
		rc, _, err = o.Get(ctx, "bkt", "k", store.ReadRange{Offset: put.Size, Length: -1, ETag: put.ETag})
		if err != nil {
			t.Fatalf("empty range: %v", err)
		}
		rc.Close()
	}
}
