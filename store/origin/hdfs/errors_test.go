// Tests of error translation: client, RPC and transport errors become store
// sentinels, and nothing else does.
package hdfs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/granary-dev/granary/store"
)

// remoteErr is a namenode error as the client returns it (it implements
// the client's hdfs.Error interface).
type remoteErr struct{ exc, desc, msg string }

func (e remoteErr) Method() string    { return "getFileInfo" }
func (e remoteErr) Desc() string      { return e.desc }
func (e remoteErr) Exception() string { return e.exc }
func (e remoteErr) Message() string   { return e.msg }
func (e remoteErr) Error() string {
	return "getFileInfo call failed with " + e.desc + " (" + e.exc + ")"
}

func pathErr(err error) error { return &os.PathError{Op: "stat", Path: "/base/b/k", Err: err} }

func TestTranslate(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	cases := []struct {
		name string
		err  error
		want error
	}{
		{"not found", pathErr(os.ErrNotExist), store.ErrNoSuchKey},
		{"permission", pathErr(os.ErrPermission), store.ErrAccessDenied},
		{"standby", remoteErr{exc: excStandby, desc: "ERROR_APPLICATION"}, store.ErrUnavailable},
		{"safe mode", pathErr(remoteErr{exc: excSafeMode, desc: "ERROR_APPLICATION"}), store.ErrUnavailable},
		{"retriable", remoteErr{exc: excRetriable}, store.ErrUnavailable},
		{"parent not a directory", pathErr(remoteErr{exc: excParentNotDir}), store.ErrNoSuchKey},
		{"invalid path", remoteErr{exc: excInvalidPath}, store.ErrInvalidKey},
		{"illegal argument", pathErr(os.ErrInvalid), store.ErrInvalidKey},
		// The client's own message when every namenode failed (%s, not %w).
		{"all namenodes down", fmt.Errorf("no available namenodes: %s", refused), store.ErrUnavailable},
		{"connection refused", refused, store.ErrUnavailable},
		{"connection reset", pathErr(syscall.ECONNRESET), store.ErrUnavailable},
	}
	for _, c := range cases {
		got := wrap("op", "b", "k", c.err, nil)
		if !errors.Is(got, c.want) {
			t.Errorf("%s: wrap(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
		if errors.Is(got, os.ErrNotExist) || errors.As(got, new(*os.PathError)) {
			t.Errorf("%s: client error type escaped: %#v", c.name, got)
		}
	}
	if got := wrap("stat bucket", "b", "", pathErr(os.ErrNotExist), store.ErrNoSuchBucket); !errors.Is(got, store.ErrNoSuchBucket) {
		t.Errorf("not found with a bucket sentinel = %v", got)
	}
	if wrap("op", "b", "k", nil, nil) != nil {
		t.Error("wrap(nil) != nil")
	}
}

func TestTranslateUnknownKeepsTextOnly(t *testing.T) {
	err := wrap("op", "b", "k", pathErr(remoteErr{exc: "java.io.IOException", msg: "disk on fire"}), nil)
	for _, s := range []error{store.ErrNoSuchKey, store.ErrUnavailable, store.ErrAccessDenied, store.ErrInvalidKey} {
		if errors.Is(err, s) {
			t.Fatalf("unknown exception translated to %v", s)
		}
	}
	if exceptionOf(err) != "" {
		t.Fatalf("remote error type escaped: %v", err)
	}
	if got := wrap("op", "b", "k", context.Canceled, nil); errors.Is(got, store.ErrUnavailable) {
		t.Fatalf("a canceled context became ErrUnavailable: %v", got)
	}
}

func TestIsUnsupported(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{pathErr(remoteErr{exc: excNoSuchMethod}), true},
		{remoteErr{desc: "ERROR_NO_SUCH_METHOD"}, true},
		{remoteErr{exc: "java.io.IOException", msg: "The XAttr operation has been rejected. Support for XAttrs has been disabled by setting dfs.namenode.xattrs.enabled to false."}, true},
		{remoteErr{exc: excStandby}, false},
		{pathErr(os.ErrNotExist), false},
	} {
		if got := isUnsupported(c.err); got != c.want {
			t.Errorf("isUnsupported(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
