// Translation of HDFS client, RPC and transport errors into store
// sentinels: the only place this package looks inside an error.
package hdfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"

	hdfsclient "github.com/colinmarc/hdfs/v2"

	"github.com/granary-dev/granary/store"
)

// Java exceptions a namenode answers with, by class name.
const (
	excStandby      = "org.apache.hadoop.ipc.StandbyException"
	excSafeMode     = "org.apache.hadoop.hdfs.server.namenode.SafeModeException"
	excRetriable    = "org.apache.hadoop.ipc.RetriableException"
	excParentNotDir = "org.apache.hadoop.fs.ParentNotDirectoryException"
	excInvalidPath  = "org.apache.hadoop.fs.InvalidPathException"
	excNoSuchMethod = "org.apache.hadoop.ipc.RpcNoSuchMethodException"
	excUnsupported  = "java.lang.UnsupportedOperationException"
)

// noNamenodes starts the message the client returns (as a plain error,
// %s-formatted) when every namenode failed or is in its 5s backoff after
// a failure or a StandbyException.
const noNamenodes = "no available namenodes"

// exceptionOf returns the Java exception class of a remote error, or "".
func exceptionOf(err error) string {
	var re hdfsclient.Error
	if errors.As(err, &re) {
		return re.Exception()
	}
	return ""
}

// wrap translates err (nil stays nil) and names the operation. notFound is
// the sentinel a missing path means here (nil: a missing path is
// ErrNoSuchKey).
func wrap(op, bucket, key string, err error, notFound error) error {
	if err == nil {
		return nil
	}
	where := bucket
	if key != "" {
		where += "/" + key
	}
	return fmt.Errorf("hdfs: %s %s: %w", op, where, translate(err, notFound))
}

// translate returns the store sentinel for err, wrapped with its text.
// Errors with no sentinel keep only their text: no client type escapes.
func translate(err error, notFound error) error {
	if notFound == nil {
		notFound = store.ErrNoSuchKey
	}
	s := sentinel(err, notFound)
	if s == nil {
		return errors.New(err.Error())
	}
	return fmt.Errorf("%w (%v)", s, err)
}

// sentinel classifies err, or returns nil.
func sentinel(err error, notFound error) error {
	switch exceptionOf(err) {
	case excStandby, excSafeMode, excRetriable:
		return store.ErrUnavailable
	case excParentNotDir:
		return notFound
	case excInvalidPath:
		return store.ErrInvalidKey
	}
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return nil // the caller's own: keep it as is
	case errors.Is(err, os.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return notFound
	case errors.Is(err, os.ErrPermission):
		return store.ErrAccessDenied
	case errors.Is(err, os.ErrInvalid):
		return store.ErrInvalidKey
	case isTransport(err):
		return store.ErrUnavailable
	}
	return nil
}

// isTransport reports whether err means the cluster could not be reached
// or dropped the connection.
func isTransport(err error) bool {
	var ne net.Error
	var oe *net.OpError
	return strings.Contains(err.Error(), noNamenodes) ||
		errors.As(err, &ne) || errors.As(err, &oe) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, io.EOF)
}

// isUnsupported reports whether err says the namenode does not know the
// call (an older or partial namenode, or xattrs disabled).
func isUnsupported(err error) bool {
	switch exceptionOf(err) {
	case excNoSuchMethod, excUnsupported:
		return true
	}
	var re hdfsclient.Error
	if errors.As(err, &re) {
		d := re.Desc()
		return d == "ERROR_NO_SUCH_METHOD" || d == "ERROR_NO_SUCH_PROTOCOL" ||
			strings.Contains(re.Message(), "dfs.namenode.xattrs.enabled")
	}
	return false
}
