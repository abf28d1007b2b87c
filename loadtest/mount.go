// The mount scenario: files read through `granary mount` (the FUSE
// sidecar, in front of `granary serve`, in front of MinIO) against the
// same files on local disk and the same objects read over S3 from the
// gateway: one large file read sequentially, many small files read whole
// in random order by parallel readers, and the mount's peak RSS.
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/internal/pagecache"
)

// mountBucket is the scenario's bucket, on MinIO, served by granary.
const mountBucket = "mount"

// seqBufSize is the read size of the sequential readers.
const seqBufSize = 1 << 20

// mountPlan is the shape of a mount run.
type mountPlan struct {
	largeSize int64 // the one file read sequentially
	files     int   // small files
	fileSize  int   // bytes per small file
	readers   int   // parallel readers of the small files
	maxMemory int64 // the mount's --max-memory
}

func fullMountPlan() mountPlan {
	return mountPlan{largeSize: 1 << 30, files: 10_000, fileSize: 100 << 10, readers: 8, maxMemory: 256 << 20}
}

func quickMountPlan() mountPlan {
	return mountPlan{largeSize: 64 << 20, files: 1_000, fileSize: 100 << 10, readers: 8, maxMemory: 256 << 20}
}

// mountData is the scenario's files, as objects with their expected
// bytes: large is the sequential file, small the random-read ones (key
// "small/NNNNN", windows into one random pool as in dataset).
type mountData struct {
	large object
	small []object
}

func newMountData(p mountPlan) *mountData {
	const poolSize = 64 << 20
	pool := randomBytes(poolSize, 3)
	d := &mountData{large: object{key: "large/" + sizeName(p.largeSize) + ".bin", data: randomBytes(p.largeSize, 200)}}
	for i := range p.files {
		// Distinct offsets, as in newDataset: 4099 does not divide the
		// window range, and files*4099 stays below it.
		off := i * 4099 % (poolSize - p.fileSize)
		d.small = append(d.small, object{key: fmt.Sprintf("small/%05d", i), data: pool[off : off+p.fileSize]})
	}
	return d
}

// dataset returns d as a dataset in bucket, to seed MinIO with.
func (d *mountData) dataset() *dataset {
	return &dataset{bucket: mountBucket, sets: []objectSet{{objects: d.small}}, large: []object{d.large}}
}

// writeLocal writes every file of d under dir, as the mount shows them,
// and syncs them to disk.
func (d *mountData) writeLocal(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "small"), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "large"), 0o755); err != nil {
		return err
	}
	for _, o := range append([]object{d.large}, d.small...) {
		if err := os.WriteFile(filepath.Join(dir, o.key), o.data, 0o644); err != nil {
			return err
		}
	}
	syscall.Sync()
	return nil
}

// dropPageCache writes back dirty pages and empties the kernel's page
// cache (root only): it makes the local disk's cold read cold.
func dropPageCache() error {
	syscall.Sync()
	return pagecache.Drop(pagecache.All)
}

// readAllInto reads r to its end into buf and returns the byte count; a
// body longer than buf is an error.
func readAllInto(r io.Reader, buf []byte) (int, error) {
	n := 0
	for {
		if n == len(buf) {
			var one [1]byte
			if k, err := r.Read(one[:]); k > 0 || (err != nil && err != io.EOF) {
				return n, fmt.Errorf("longer than %d bytes (%v)", len(buf), err)
			}
			return n, nil
		}
		k, err := r.Read(buf[n:])
		n += k
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// verify checks got against o's bytes.
func verify(o object, got []byte) error {
	if len(got) != len(o.data) {
		return fmt.Errorf("%s: read %d bytes, want %d", o.key, len(got), len(o.data))
	}
	if string(got) != string(o.data) {
		return fmt.Errorf("%s: content differs from what was written", o.key)
	}
	return nil
}

// readSeq reads r to its end in seqBufSize reads, comparing every chunk
// with o's bytes.
func readSeq(r io.Reader, o object) error {
	buf := make([]byte, seqBufSize)
	var off int64
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if off+int64(n) > int64(len(o.data)) || string(buf[:n]) != string(o.data[off:off+int64(n)]) {
				return fmt.Errorf("%s: bytes %d..%d differ from what was written", o.key, off, off+int64(n))
			}
			off += int64(n)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%s at %d: %w", o.key, off, err)
		}
	}
	if off != int64(len(o.data)) {
		return fmt.Errorf("%s: read %d bytes, want %d", o.key, off, len(o.data))
	}
	return nil
}

// readSeqFile reads the file of o under dir sequentially and returns how
// long that took, open included.
func readSeqFile(dir string, o object) (time.Duration, error) {
	start := time.Now()
	f, err := os.Open(filepath.Join(dir, o.key))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	err = readSeq(f, o)
	return time.Since(start), err
}

// readSeqS3 GETs o from bucket, reads it sequentially and returns how
// long that took.
func readSeqS3(ctx context.Context, cl *minio.Client, bucket string, o object) (time.Duration, error) {
	start := time.Now()
	obj, err := cl.GetObject(ctx, bucket, o.key, minio.GetObjectOptions{})
	if err != nil {
		return 0, err
	}
	defer obj.Close()
	err = readSeq(obj, o)
	return time.Since(start), err
}

// openFileUnder returns an opener of the objects' files under dir.
func openFileUnder(dir string) func(object) (io.ReadCloser, error) {
	return func(o object) (io.ReadCloser, error) { return os.Open(filepath.Join(dir, o.key)) }
}

// openS3 returns an opener of the objects in bucket over S3.
func openS3(ctx context.Context, cl *minio.Client, bucket string) func(object) (io.ReadCloser, error) {
	return func(o object) (io.ReadCloser, error) {
		return cl.GetObject(ctx, bucket, o.key, minio.GetObjectOptions{})
	}
}

// newS3Client returns a minio-go client of the S3 endpoint at host:port,
// and its transport, whose idle connections the caller closes when done.
func newS3Client(hostport, access, secret string) (*minio.Client, *http.Transport, error) {
	tr, err := minio.DefaultTransport(false)
	if err != nil {
		return nil, nil, err
	}
	cl, err := minio.New(hostport, &minio.Options{Creds: credentials.NewStaticV4(access, secret, ""), Region: "us-east-1", Transport: tr})
	return cl, tr, err
}

// seedMount seeds mio with d and writes d's local copy under dir/local.
func seedMount(ctx context.Context, d *mountData, mio *miniotest.Server, dir string, logf func(string, ...any)) error {
	if err := seedMinio(ctx, d.dataset(), mio, logf); err != nil {
		return err
	}
	t0 := time.Now()
	if err := d.writeLocal(filepath.Join(dir, "local")); err != nil {
		return err
	}
	logf("wrote the same %d files to local disk in %v", len(d.small)+1, time.Since(t0).Round(time.Millisecond))
	return nil
}
