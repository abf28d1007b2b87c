// Translation of minio-go and transport errors into store sentinels: the
// only place this package looks inside an error.
package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/store"
)

// codes maps S3 error codes to sentinels.
var codes = map[string]error{
	"NoSuchBucket":               store.ErrNoSuchBucket,
	"NoSuchKey":                  store.ErrNoSuchKey,
	"BucketAlreadyOwnedByYou":    store.ErrBucketExists,
	"BucketAlreadyExists":        store.ErrBucketExists,
	"BucketNotEmpty":             store.ErrBucketNotEmpty,
	"PreconditionFailed":         store.ErrPreconditionFailed,
	"AccessDenied":               store.ErrAccessDenied,
	"AllAccessDisabled":          store.ErrAccessDenied,
	"InvalidAccessKeyId":         store.ErrAccessDenied,
	"SignatureDoesNotMatch":      store.ErrAccessDenied,
	"InvalidBucketName":          store.ErrInvalidBucketName,
	"InvalidObjectName":          store.ErrInvalidKey,
	"XMinioInvalidObjectName":    store.ErrInvalidKey,
	"KeyTooLongError":            store.ErrInvalidKey,
	"IncompleteBody":             store.ErrIncompleteBody,
	"UnexpectedEOF":              store.ErrIncompleteBody,
	"SlowDown":                   store.ErrUnavailable,
	"SlowDownRead":               store.ErrUnavailable,
	"SlowDownWrite":              store.ErrUnavailable,
	"ServiceUnavailable":         store.ErrUnavailable,
	"InternalError":              store.ErrUnavailable,
	"RequestTimeout":             store.ErrUnavailable,
	"Throttling":                 store.ErrUnavailable,
	"XMinioServerNotInitialized": store.ErrUnavailable,
	"NoSuchUpload":               store.ErrNoSuchUpload,
	"InvalidPart":                store.ErrInvalidPart,
	"InvalidPartOrder":           store.ErrInvalidPartOrder,
	"EntityTooSmall":             store.ErrEntityTooSmall,
}

// wrap translates err (nil stays nil) and names the operation. ctx is the
// caller's: it tells the caller's own cancellation from a timeout of the
// transport.
func wrap(ctx context.Context, op, bucket, key string, err error) error {
	if err == nil {
		return nil
	}
	where := bucket
	if key != "" {
		where += "/" + key
	}
	return fmt.Errorf("s3: %s %s: %w", op, where, translate(ctx, err))
}

// translate returns the store sentinel for err, wrapped with the
// origin's message. Errors with no sentinel keep only their text: no
// minio-go type escapes this package.
func translate(ctx context.Context, err error) error {
	var er minio.ErrorResponse
	if errors.As(err, &er) {
		return fromResponse(er)
	}
	if cerr := ctx.Err(); cerr != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return cerr // the caller gave up; the origin is not to blame
	}
	if isTransport(err) {
		// The transport's error stays in the chain (standard library
		// types only: net, tls, x509, syscall), so a health check can
		// name the cause (store/origin/guard).
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return errors.New(err.Error())
}

// fromResponse maps an S3 error response by code, then by HTTP status.
func fromResponse(er minio.ErrorResponse) error {
	msg := er.Code
	if er.Message != "" {
		msg += ": " + er.Message
	}
	if s, ok := codes[er.Code]; ok {
		return fmt.Errorf("%w (%s)", s, msg)
	}
	if er.Code == "InvalidArgument" && strings.Contains(strings.ToLower(er.Message), "part number") {
		// S3 and MinIO: "Part number must be an integer between 1 and
		// 10000, inclusive".
		return fmt.Errorf("%w (%s)", store.ErrInvalidPartNumber, msg)
	}
	switch {
	case er.StatusCode >= 500:
		return fmt.Errorf("%w (%d %s)", store.ErrUnavailable, er.StatusCode, msg)
	case er.StatusCode == 403:
		return fmt.Errorf("%w (%s)", store.ErrAccessDenied, msg)
	case er.StatusCode == 412:
		return fmt.Errorf("%w (%s)", store.ErrPreconditionFailed, msg)
	case er.StatusCode >= 400 && er.StatusCode < 500:
		return &store.OriginError{Status: er.StatusCode, Code: clientCode(er.Code), Message: er.Message}
	}
	return fmt.Errorf("origin error %d (%s)", er.StatusCode, msg)
}

// clientCode is the S3 code of a 4xx answer: its own, or InvalidRequest
// for one that named none (minio-go names a bodiless answer by its
// status line, "400 Bad Request").
func clientCode(code string) string {
	if code == "" || strings.ContainsAny(code, " \t") {
		return "InvalidRequest"
	}
	return code
}

// isTransport reports whether err is a failure to reach or hear from the
// server: refused or reset connections, timeouts (the transport's own
// report as context.DeadlineExceeded), broken responses.
func isTransport(err error) bool {
	var ue *url.Error
	var ne net.Error
	return errors.As(err, &ue) || errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}
