// The checkpoint the checkpoint scenario saves and restores: shards of
// seeded random bytes in one temporary file (so a save reads the page
// cache rather than a generator competing for the two cores), saved and
// restored with every shard at once, as a training job's ranks would, by
// minio-go with the same options for every target.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// ckptPlan is the shape of a checkpoint.
type ckptPlan struct {
	shards    int
	shardSize int64
}

func fullCkptPlan() ckptPlan  { return ckptPlan{shards: 4, shardSize: 512 << 20} }
func quickCkptPlan() ckptPlan { return ckptPlan{shards: 4, shardSize: 32 << 20} }

// total is the checkpoint's size.
func (p ckptPlan) total() int64 { return int64(p.shards) * p.shardSize }

// checkpointFile holds every shard, one after the other, in a temporary
// file, and each shard's sha256.
type checkpointFile struct {
	plan ckptPlan
	f    *os.File
	sums [][sha256.Size]byte
}

// newCheckpointFile writes the shards of p into a new file in dir.
func newCheckpointFile(dir string, p ckptPlan) (*checkpointFile, error) {
	f, err := os.CreateTemp(dir, "checkpoint-*.bin")
	if err != nil {
		return nil, err
	}
	c := &checkpointFile{plan: p, f: f, sums: make([][sha256.Size]byte, p.shards)}
	buf := make([]byte, 4<<20)
	for i := range p.shards {
		seed := [32]byte{0: byte(i), 1: 0xc4, 2: 0x9e}
		rng := rand.NewChaCha8(seed)
		h := sha256.New()
		w := io.MultiWriter(f, h)
		for left := p.shardSize; left > 0; {
			b := buf[:min(left, int64(len(buf)))]
			rng.Read(b)
			if _, err := w.Write(b); err != nil {
				c.close()
				return nil, err
			}
			left -= int64(len(b))
		}
		h.Sum(c.sums[i][:0])
	}
	return c, nil
}

// shard returns a reader of shard i. It is an io.ReaderAt, so minio-go
// uploads its parts in parallel straight from the file.
func (c *checkpointFile) shard(i int) *io.SectionReader {
	return io.NewSectionReader(c.f, int64(i)*c.plan.shardSize, c.plan.shardSize)
}

func (c *checkpointFile) close() {
	c.f.Close()
	os.Remove(c.f.Name())
}

// shardKey names shard i of the checkpoint under prefix.
func (c *checkpointFile) shardKey(prefix string, i int) string {
	return fmt.Sprintf("%s/shard-%02d-of-%02d", prefix, i, c.plan.shards)
}

// newCkptClient is the one minio-go client configuration every target is
// saved to and restored from.
func newCkptClient(hostPort, access, secret string) (*minio.Client, error) {
	return minio.New(hostPort, &minio.Options{
		Creds: credentials.NewStaticV4(access, secret, ""), Region: "us-east-1",
	})
}

// saveCheckpoint PUTs every shard at once (PutObject's default multipart
// upload, parts in parallel) and returns the time until the last one was
// acknowledged.
func saveCheckpoint(ctx context.Context, cl *minio.Client, bucket, prefix string, c *checkpointFile) (time.Duration, error) {
	return parallel(c.plan.shards, func(i int) error {
		key := c.shardKey(prefix, i)
		info, err := cl.PutObject(ctx, bucket, key, c.shard(i), c.plan.shardSize,
			minio.PutObjectOptions{ContentType: "application/octet-stream"})
		if err != nil {
			return fmt.Errorf("save %s/%s: %w", bucket, key, err)
		}
		if info.Size != c.plan.shardSize {
			return fmt.Errorf("save %s/%s: %d bytes acknowledged, want %d", bucket, key, info.Size, c.plan.shardSize)
		}
		return nil
	})
}

// restoreCheckpoint GETs every shard at once, each as one stream, and
// checks each one's length and sha256.
func restoreCheckpoint(ctx context.Context, cl *minio.Client, bucket, prefix string, c *checkpointFile) (time.Duration, error) {
	return restoreShards(ctx, cl, bucket, prefix, c, c.plan.shards)
}

// restoreShards restores the first n shards as restoreCheckpoint does.
func restoreShards(ctx context.Context, cl *minio.Client, bucket, prefix string, c *checkpointFile, n int) (time.Duration, error) {
	return parallel(n, func(i int) error {
		key := c.shardKey(prefix, i)
		obj, err := cl.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
		if err != nil {
			return fmt.Errorf("restore %s/%s: %w", bucket, key, err)
		}
		defer obj.Close()
		h := sha256.New()
		n, err := io.CopyBuffer(h, obj, make([]byte, 1<<20))
		if err != nil {
			return fmt.Errorf("restore %s/%s: after %d bytes: %w", bucket, key, n, err)
		}
		var sum [sha256.Size]byte
		if h.Sum(sum[:0]); n != c.plan.shardSize || sum != c.sums[i] {
			return fmt.Errorf("restore %s/%s: %d bytes, sha256 %x; want %d bytes, %x", bucket, key, n, sum, c.plan.shardSize, c.sums[i])
		}
		return nil
	})
}

// ckptRanges is how many ranged GETs a ranged restore reads each shard
// in: 32 for the full checkpoint's four shards, as a job whose ranks
// each read part of every shard does.
const ckptRanges = 8

// restoreRanged GETs every shard as ckptRanges ranges, all at once, and
// checks each range's bytes against the checkpoint's.
func restoreRanged(ctx context.Context, cl *minio.Client, bucket, prefix string, c *checkpointFile) (time.Duration, error) {
	per := c.plan.shardSize / ckptRanges
	return parallel(c.plan.shards*ckptRanges, func(j int) error {
		i, part := j/ckptRanges, int64(j%ckptRanges)
		key := c.shardKey(prefix, i)
		opts := minio.GetObjectOptions{}
		start, end := part*per, (part+1)*per-1
		if part == ckptRanges-1 {
			end = c.plan.shardSize - 1
		}
		opts.SetRange(start, end) //nolint:errcheck // a valid range
		obj, err := cl.GetObject(ctx, bucket, key, opts)
		if err != nil {
			return fmt.Errorf("restore %s/%s bytes %d-%d: %w", bucket, key, start, end, err)
		}
		defer obj.Close()
		want := io.NewSectionReader(c.f, int64(i)*c.plan.shardSize+start, end-start+1)
		if err := sameBytes(obj, want); err != nil {
			return fmt.Errorf("restore %s/%s bytes %d-%d: %w", bucket, key, start, end, err)
		}
		return nil
	})
}

// sameBytes reads got to its end and checks it holds want's bytes.
func sameBytes(got, want io.Reader) error {
	a, b := make([]byte, 1<<20), make([]byte, 1<<20)
	var n int64
	for {
		k, err := io.ReadFull(got, a)
		if k > 0 {
			if _, werr := io.ReadFull(want, b[:k]); werr != nil {
				return fmt.Errorf("%d bytes, more than the checkpoint's", n+int64(k))
			}
			if !bytes.Equal(a[:k], b[:k]) {
				return fmt.Errorf("bytes from %d differ from the checkpoint's", n)
			}
			n += int64(k)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("after %d bytes: %w", n, err)
		}
	}
	if k, _ := want.Read(b[:1]); k > 0 {
		return fmt.Errorf("%d bytes, fewer than the checkpoint's", n)
	}
	return nil
}

// parallel runs f(0..n-1) at once and returns the time until the last
// returned, with every error.
func parallel(n int, f func(int) error) (time.Duration, error) {
	var wg sync.WaitGroup
	errs := make([]error, n) // slot i written only by call i
	t0 := time.Now()
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = f(i) }()
	}
	wg.Wait()
	return time.Since(t0), errors.Join(errs...)
}
