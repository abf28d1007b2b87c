// The seam between the benchmark and the endpoint it measures: Store is
// what bench needs of an S3 service, S3Store the minio-go one.
package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/minio/minio-go/v7"
)

// Store is an object store as the benchmark uses it. Keys are whole
// object names (prefix included).
type Store interface {
	// Put writes size bytes from r as key (multipart when large).
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// Read reads n bytes of key from off and discards them, returning how
	// many arrived; whole asks for the object without a range.
	Read(ctx context.Context, key string, off, n int64, whole bool) (int64, error)
	// Fetch returns a small object whole (the manifest).
	Fetch(ctx context.Context, key string) ([]byte, error)
}

// S3Store is a Store on one bucket through minio-go.
type S3Store struct {
	Client   *minio.Client
	Bucket   string
	PartSize uint64 // multipart part size; 0: 16 MiB
	Threads  uint   // parts of one object uploaded at once; 0: 4
}

var _ Store = (*S3Store)(nil)

// Put uploads r as key.
func (s *S3Store) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	part, threads := s.PartSize, s.Threads
	if part == 0 {
		part = 16 << 20
	}
	if threads == 0 {
		threads = 4
	}
	_, err := s.Client.PutObject(ctx, s.Bucket, key, r, size, minio.PutObjectOptions{
		PartSize: part, NumThreads: threads, ContentType: "application/octet-stream"})
	if err != nil {
		return fmt.Errorf("put s3://%s/%s: %w", s.Bucket, key, err)
	}
	return nil
}

// Read GETs the range and counts the bytes.
func (s *S3Store) Read(ctx context.Context, key string, off, n int64, whole bool) (int64, error) {
	var opts minio.GetObjectOptions
	if !whole {
		if err := opts.SetRange(off, off+n-1); err != nil {
			return 0, err
		}
	}
	obj, err := s.Client.GetObject(ctx, s.Bucket, key, opts)
	if err != nil {
		return 0, fmt.Errorf("get s3://%s/%s: %w", s.Bucket, key, err)
	}
	defer obj.Close()
	got, err := io.Copy(io.Discard, obj)
	if err != nil {
		return got, fmt.Errorf("get s3://%s/%s: %w", s.Bucket, key, err)
	}
	if got != n {
		return got, fmt.Errorf("get s3://%s/%s: %d bytes, want %d", s.Bucket, key, got, n)
	}
	return got, nil
}

// Fetch reads key whole.
func (s *S3Store) Fetch(ctx context.Context, key string) ([]byte, error) {
	obj, err := s.Client.GetObject(ctx, s.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("get s3://%s/%s: %w", s.Bucket, key, err)
	}
	defer obj.Close()
	var b bytes.Buffer
	if _, err := io.Copy(&b, io.LimitReader(obj, 256<<20)); err != nil {
		return nil, fmt.Errorf("get s3://%s/%s: %w", s.Bucket, key, err)
	}
	return b.Bytes(), nil
}
