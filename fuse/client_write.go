// The S3 calls of the write path: upload of a staged file, download of
// an object into one, server-side copy, delete, folder markers, and the
// emptiness check of rmdir. Every call is bounded by a timeout.
package fuse

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"time"

	"github.com/minio/minio-go/v7"
)

const (
	// floorRate is the slowest transfer rate (bytes/s) an upload,
	// download or copy is given time for, on top of getTimeout.
	floorRate = 4 << 20
	// maxCopy is the largest object a single server-side copy takes;
	// larger ones are copied part by part (ComposeObject).
	maxCopy = 5 << 30
	// uploadThreads is the number of parts a large upload sends at once.
	uploadThreads = 4
)

// transferTimeout bounds moving size bytes, retries included.
func transferTimeout(size int64) time.Duration {
	return getTimeout + time.Duration(size/floorRate)*time.Second
}

// put uploads the first size bytes of f as key. minio-go reads f through
// ReadAt: a large file goes up as a multipart upload with parallel
// parts, each streamed from the file, never held in memory. Bodies go
// unsigned, each checked by the node against its CRC32C trailer
// (STREAMING-UNSIGNED-PAYLOAD-TRAILER, which every Granary node takes):
// over plain HTTP, signing them would hash every byte with SHA-256 on
// both sides, three times the CPU of a saved checkpoint's upload.
//
// minio-go does not send such a body again itself (a part's checksum is
// computed as it streams), so put does: the whole file, up to attempts
// times, while the node is unavailable (5xx, no answer) or the CRC did
// not match (a body changed on the way, or minio-go's own retry of a
// single PUT, whose CRC does not start over).
func (c *client) put(ctx context.Context, key string, f *os.File, size int64) (objInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, transferTimeout(size))
	defer cancel()
	var up minio.UploadInfo
	var err error
	for try := 1; ; try++ {
		up, err = c.mc.PutObject(ctx, c.bucket, key, io.NewSectionReader(f, 0, size), size,
			minio.PutObjectOptions{ContentType: "application/octet-stream", NumThreads: uploadThreads,
				DisableContentSha256: true, Checksum: minio.ChecksumCRC32C}) // named: minio-go's default skips a single PUT's
		if err == nil {
			break
		}
		err = s3Error("put", key, err)
		if try == attempts || !putAgain(err) || !sleepCtx(ctx, time.Duration(try)*putBackoff) {
			return objInfo{}, err
		}
	}
	mtime := up.LastModified
	if mtime.IsZero() {
		mtime = time.Now()
	}
	return objInfo{size: size, mtime: mtime, etag: up.ETag}, nil
}

// putBackoff is the wait before a put's second try; the third waits twice it.
const putBackoff = 250 * time.Millisecond

// putAgain reports whether an upload that failed with err may succeed
// when sent again whole.
func putAgain(err error) bool {
	var er minio.ErrorResponse
	return errors.Is(err, errUnavailable) || (errors.As(err, &er) && er.Code == "BadDigest")
}

// sleepCtx waits d, or less if ctx ends first; it reports whether ctx
// is still live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// download copies the current version of key into f (from offset 0)
// and returns its size. The body streams through a small buffer.
func (c *client) download(ctx context.Context, key string, f *os.File, size int64) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, transferTimeout(size))
	defer cancel()
	body, _, _, err := minio.Core{Client: c.mc}.GetObject(ctx, c.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return 0, s3Error("get", key, err)
	}
	defer body.Close()
	n, err := io.Copy(io.NewOffsetWriter(f, 0), body)
	if err != nil {
		if ctx.Err() != nil || !isLocal(err) {
			return 0, s3Error("get", key, err)
		}
		return 0, err // the staging disk: ENOSPC and the like
	}
	return n, nil
}

// isLocal reports whether err came from the local file system rather
// than from the network.
func isLocal(err error) bool {
	var pe *os.PathError
	return errors.As(err, &pe)
}

// copy copies src to dst on the server and returns dst's attributes.
func (c *client) copy(ctx context.Context, src, dst string) (objInfo, error) {
	info, err := c.head(ctx, src)
	if err != nil {
		return objInfo{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, transferTimeout(info.size))
	defer cancel()
	srcOpts := minio.CopySrcOptions{Bucket: c.bucket, Object: src}
	dstOpts := minio.CopyDestOptions{Bucket: c.bucket, Object: dst}
	var up minio.UploadInfo
	if info.size > maxCopy {
		up, err = c.mc.ComposeObject(ctx, dstOpts, srcOpts)
	} else {
		up, err = c.mc.CopyObject(ctx, dstOpts, srcOpts)
	}
	if err != nil {
		return objInfo{}, s3Error("copy", src, err)
	}
	mtime := up.LastModified
	if mtime.IsZero() {
		mtime = time.Now()
	}
	return objInfo{size: info.size, mtime: mtime, etag: up.ETag}, nil
}

// remove deletes key; deleting a missing key succeeds (S3 semantics).
func (c *client) remove(ctx context.Context, key string) error {
	ctx, cancel := context.WithTimeout(ctx, metaTimeout)
	defer cancel()
	if err := c.mc.RemoveObject(ctx, c.bucket, key, minio.RemoveObjectOptions{}); err != nil {
		return s3Error("delete", key, err)
	}
	return nil
}

// putMarker creates the folder marker prefix (ending in "/"), an empty
// object that makes an empty directory visible.
func (c *client) putMarker(ctx context.Context, prefix string) error {
	ctx, cancel := context.WithTimeout(ctx, metaTimeout)
	defer cancel()
	_, err := c.mc.PutObject(ctx, c.bucket, prefix, bytes.NewReader(nil), 0,
		minio.PutObjectOptions{DisableMultipart: true})
	if err != nil {
		return s3Error("put", prefix, err)
	}
	return nil
}

// emptyPrefix reports whether no key other than the folder marker
// prefix itself starts with prefix (which ends in "/").
func (c *client) emptyPrefix(ctx context.Context, prefix string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, metaTimeout)
	defer cancel()
	for o := range c.mc.ListObjectsIter(ctx, c.bucket, minio.ListObjectsOptions{
		Prefix: prefix, Recursive: true, MaxKeys: 2, FetchOwner: new(bool)}) {
		if o.Err != nil {
			return false, s3Error("list", prefix, o.Err)
		}
		if o.Key != prefix {
			return false, nil
		}
	}
	if ctx.Err() != nil {
		return false, s3Error("list", prefix, ctx.Err())
	}
	return true, nil
}
