// Multipart uploads: the contract of an origin (or a layer in front of one)
// that takes an object in parts, as S3's multipart upload does, and the
// S3 rules every implementation shares (part limits, the multipart ETag).
package store

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"
)

// Multipart sentinel errors.
var (
	ErrNoSuchUpload = errors.New("store: no such multipart upload")
	// ErrInvalidPart means a part listed in a completion was not uploaded,
	// or its ETag is not the one the upload holds.
	ErrInvalidPart = errors.New("store: listed part missing or its ETag differs")
	// ErrInvalidPartOrder means a completion's parts are not in strictly
	// ascending order of part number.
	ErrInvalidPartOrder = errors.New("store: parts not in ascending order")
	// ErrEntityTooSmall means a part other than the last is below
	// MinPartSize.
	ErrEntityTooSmall = errors.New("store: part below the minimum size")
	// ErrInvalidPartNumber means a part number outside 1..MaxPartNumber.
	ErrInvalidPartNumber = errors.New("store: part number out of range")
	// ErrSlowDown means a write was refused because too much data waits for
	// the origin; the client should retry later.
	ErrSlowDown = errors.New("store: too much data waiting for the origin")
)

// S3's part limits.
const (
	MinPartSize   = 5 << 20 // every part but the last
	MaxPartSize   = 5 << 30
	MaxPartNumber = 10000
)

// PartInfo describes one uploaded part. ETag is the hex MD5 of the part,
// without quotes.
type PartInfo struct {
	Number       int
	ETag         string
	Size         int64
	LastModified time.Time
}

// CompletePart names a part in a completion: its number and the ETag its
// upload returned (without quotes).
type CompletePart struct {
	Number int
	ETag   string
}

// UploadInfo describes one multipart upload in progress.
type UploadInfo struct {
	Key       string
	UploadID  string
	Initiated time.Time
}

// PartListOptions selects a page of an upload's parts: those numbered
// above After, at most MaxParts (<= 0 means 1000).
type PartListOptions struct {
	After    int
	MaxParts int
}

// PartPage is a page of parts in ascending order of number. When
// IsTruncated, NextAfter is the After of the next page.
type PartPage struct {
	Parts       []PartInfo
	IsTruncated bool
	NextAfter   int
}

// UploadListOptions selects a page of a bucket's uploads in progress, in
// order of key, then of initiation (uploads of one key), then of ID. The
// page starts after (KeyAfter, UploadIDAfter): with UploadIDAfter empty,
// after every upload of KeyAfter. Prefix and Delimiter group keys as in a
// listing. MaxUploads <= 0 means 1000.
type UploadListOptions struct {
	Prefix        string
	Delimiter     string
	KeyAfter      string
	UploadIDAfter string
	MaxUploads    int
}

// UploadPage is a page of uploads. When IsTruncated, NextKeyAfter and
// NextUploadIDAfter start the next page.
type UploadPage struct {
	Uploads           []UploadInfo
	CommonPrefixes    []string
	IsTruncated       bool
	NextKeyAfter      string
	NextUploadIDAfter string
}

// Multipart is an Origin ability: objects uploaded in parts. Part numbers
// run 1..MaxPartNumber; an upload ID is valid for the bucket and key it was
// created for only (anything else is ErrNoSuchUpload).
type Multipart interface {
	// NewUpload starts an upload of bucket/key with meta and returns its ID.
	NewUpload(ctx context.Context, bucket, key string, meta ObjectMeta) (string, error)
	// PutPart stores part number of the upload from exactly size bytes of
	// body, replacing a part of that number. A body that fails or ends
	// early (ErrIncompleteBody) leaves the earlier part, if any, in place.
	PutPart(ctx context.Context, bucket, key, uploadID string, number int, body io.Reader, size int64) (PartInfo, error)
	// CompleteUpload joins the listed parts (ascending numbers, each with
	// the ETag its PutPart returned; every part but the last at least
	// MinPartSize) into the object and ends the upload. The object's ETag
	// is MultipartETag of the listed parts' ETags. A failed completion
	// leaves the upload as it was, so it may be retried.
	CompleteUpload(ctx context.Context, bucket, key, uploadID string, parts []CompletePart) (ObjectInfo, error)
	// AbortUpload ends the upload and drops its parts.
	AbortUpload(ctx context.Context, bucket, key, uploadID string) error
	ListParts(ctx context.Context, bucket, key, uploadID string, opts PartListOptions) (PartPage, error)
	ListUploads(ctx context.Context, bucket string, opts UploadListOptions) (UploadPage, error)
}

// MultipartETag is S3's ETag of an object completed from parts with the
// given ETags (hex MD5s): the hex MD5 of their binary MD5s joined, a dash,
// and the number of parts.
func MultipartETag(partETags []string) (string, error) {
	h := md5.New()
	for _, et := range partETags {
		b, err := hex.DecodeString(et)
		if err != nil || len(b) != md5.Size {
			return "", fmt.Errorf("%w: part ETag %q is not an MD5", ErrInvalidPart, et)
		}
		h.Write(b)
	}
	return fmt.Sprintf("%s-%d", hex.EncodeToString(h.Sum(nil)), len(partETags)), nil
}

// CheckCompletion applies S3's rules to a completion before any part is
// looked at: at least one part, numbers in range and strictly ascending.
// A number listed twice in a row is a part that cannot be found twice
// (S3 answers InvalidPart), not a disorder.
func CheckCompletion(parts []CompletePart) error {
	if len(parts) == 0 {
		return fmt.Errorf("%w: no parts listed", ErrInvalidPart)
	}
	for i, p := range parts {
		if p.Number < 1 || p.Number > MaxPartNumber {
			return fmt.Errorf("%w: %d", ErrInvalidPartNumber, p.Number)
		}
		switch {
		case i == 0:
		case p.Number == parts[i-1].Number:
			return fmt.Errorf("%w: part %d listed twice", ErrInvalidPart, p.Number)
		case p.Number < parts[i-1].Number:
			return ErrInvalidPartOrder
		}
	}
	return nil
}
