// The one place where S3 errors become this package's error vocabulary
// and where that vocabulary becomes errnos for the kernel.
package fuse

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"syscall"

	"github.com/minio/minio-go/v7"
)

// The package's error vocabulary. s3Error wraps every error that comes
// out of minio-go in one of these (keeping the original message), and
// errnoOf maps them to errnos; nothing else inspects S3 errors.
var (
	errNotFound    = errors.New("no such key")
	errNoBucket    = errors.New("no such bucket")
	errAccess      = errors.New("access denied")
	errStale       = errors.New("object changed since it was opened")
	errUnavailable = errors.New("endpoint unavailable")
	errInvalid     = errors.New("invalid request")
	errNoSpace     = errors.New("no space left at the endpoint")
)

// s3Error translates an error returned by minio-go. It must see the
// error before anything wraps it: minio.ToErrorResponse is a type
// switch, not errors.As.
func s3Error(op, key string, err error) error {
	if err == nil {
		return nil
	}
	resp := minio.ToErrorResponse(err)
	var kind error
	switch {
	case resp.Code == minio.NoSuchBucket:
		kind = errNoBucket
	case resp.Code == minio.NoSuchKey || resp.Code == "NotFound" || resp.StatusCode == http.StatusNotFound:
		kind = errNotFound
	case resp.Code == minio.AccessDenied || resp.Code == "InvalidAccessKeyId" ||
		resp.Code == "SignatureDoesNotMatch" || resp.StatusCode == http.StatusForbidden:
		kind = errAccess
	case resp.Code == minio.PreconditionFailed || resp.StatusCode == http.StatusPreconditionFailed:
		kind = errStale
	case resp.Code == "XMinioStorageFull" || resp.Code == "QuotaExceeded" ||
		resp.Code == "EntityTooLarge":
		kind = errNoSpace
	case resp.StatusCode >= 500 || resp.Code == "SlowDown" || resp.Code == "ServiceUnavailable":
		kind = errUnavailable
	case resp.Code != "" || resp.StatusCode != 0:
		kind = errInvalid
	default:
		// Not an S3 answer: a network error, a timeout, a cancelled
		// context. All of these mean the endpoint did not answer.
		kind = errUnavailable
	}
	return fmt.Errorf("%s %q: %w: %w", op, key, kind, err)
}

// errnoOf maps an error of this package's vocabulary to the errno the
// kernel sees. Anything unknown is an I/O error.
func errnoOf(err error) syscall.Errno {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errNotFound):
		return syscall.ENOENT
	case errors.Is(err, errAccess):
		return syscall.EACCES
	case errors.Is(err, errNoBucket):
		// The bucket vanished under the mount: nothing in it exists.
		return syscall.ENOENT
	case errors.Is(err, errNoSpace):
		return syscall.ENOSPC
	case localErrno(err) != 0:
		return localErrno(err)
	case errors.Is(err, errStale):
		return syscall.EIO
	case errors.Is(err, context.Canceled):
		// The caller was interrupted; not the endpoint's fault.
		return syscall.EINTR
	default:
		return syscall.EIO
	}
}

// localErrno returns the errno of a failure of the local staging file
// that the caller should see as is (a full or over-quota disk, a file
// too large), or 0.
func localErrno(err error) syscall.Errno {
	var e syscall.Errno
	if errors.As(err, &e) && (e == syscall.ENOSPC || e == syscall.EDQUOT || e == syscall.EFBIG) {
		return e
	}
	return 0
}
