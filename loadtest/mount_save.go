// The mount scenario's save row: the large file written through a
// read-write mount, as torch.save writes a checkpoint to a mounted
// bucket, timed until its close returns (the mount uploads on close),
// with the CPU the mount and the node spent on it; then read back
// through the node and compared. The reference is the same bytes put to
// MinIO directly with minio-go, as a job without the mount would.
package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/internal/miniotest"
)

// mountSave is the save row.
type mountSave struct {
	bytes             int64
	elapsed           time.Duration // the write and its close
	mountCPU, nodeCPU time.Duration
	verified          bool          // read back whole through the node
	direct            time.Duration // the same bytes put to MinIO directly
}

// perGiB is d per GiB saved.
func (s mountSave) perGiB(d time.Duration) float64 {
	return d.Seconds() * float64(1<<30) / float64(s.bytes)
}

// saveRow writes the large file's bytes under saved/ through a new
// read-write mount at dir/mnt-save.
func (r *mountRun) saveRow(ctx context.Context, bin string, g *granaryProc, mio *miniotest.Server, dir string) error {
	direct, err := r.putDirect(ctx, mio)
	if err != nil {
		return err
	}
	mnt, logPath, err := mountDirs(dir, "mnt-save")
	if err != nil {
		return err
	}
	m, err := startMount(bin, g.endpoint(), granaryAccess, granarySecret, mountBucket, mnt, logPath, r.rep.plan.maxMemory)
	if err != nil {
		return err
	}
	defer m.stop()
	key := "saved/" + filepath.Base(r.d.large.key)
	if err := os.MkdirAll(filepath.Join(mnt, "saved"), 0o755); err != nil {
		return err
	}
	cpu := func() (node, mount time.Duration, err error) {
		if node, err = g.runTime(); err == nil {
			mount, err = procRunTime(m.cmd.Process.Pid)
		}
		return node, mount, err
	}
	g0, m0, err := cpu()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := os.WriteFile(filepath.Join(mnt, key), r.d.large.data, 0o644); err != nil {
		return fmt.Errorf("save through the mount: %w\ngranary mount log tail:\n%s", err, m.tail())
	}
	s := mountSave{bytes: int64(len(r.d.large.data)), elapsed: time.Since(start), direct: direct}
	g1, m1, err := cpu()
	if err != nil {
		return err
	}
	s.nodeCPU, s.mountCPU = g1-g0, m1-m0
	if s.verified, err = r.sameAtNode(ctx, g, key); err != nil {
		return err
	}
	r.rep.save = &s
	r.logf("save %s through the mount: %.2f s (MinIO direct %.2f s), mount CPU %.2f s/GiB, node %.2f s/GiB, read back whole: %v", sizeName(s.bytes),
		s.elapsed.Seconds(), s.direct.Seconds(), s.perGiB(s.mountCPU), s.perGiB(s.nodeCPU), s.verified)
	return m.stop()
}

// putDirect puts the large file's bytes to MinIO with minio-go's
// defaults and returns how long it took.
func (r *mountRun) putDirect(ctx context.Context, mio *miniotest.Server) (time.Duration, error) {
	cl, tr, err := newS3Client(mio.Endpoint, mio.AccessKey, mio.SecretKey)
	if err != nil {
		return 0, err
	}
	defer tr.CloseIdleConnections()
	start := time.Now()
	data := r.d.large.data
	if _, err := cl.PutObject(ctx, mountBucket, "direct/"+filepath.Base(r.d.large.key), bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{ContentType: "application/octet-stream"}); err != nil {
		return 0, fmt.Errorf("put to MinIO directly: %w", err)
	}
	return time.Since(start), nil
}

// sameAtNode reads key through the node and compares it with the large
// file's bytes.
func (r *mountRun) sameAtNode(ctx context.Context, g *granaryProc, key string) (bool, error) {
	gw, tr, err := newS3Client(g.addr, granaryAccess, granarySecret)
	if err != nil {
		return false, err
	}
	defer tr.CloseIdleConnections()
	obj, err := gw.GetObject(ctx, mountBucket, key, minio.GetObjectOptions{})
	if err != nil {
		return false, err
	}
	defer obj.Close()
	got, err := io.ReadAll(obj)
	if err != nil {
		return false, err
	}
	return bytes.Equal(got, r.d.large.data), nil
}

// saveMarkdown renders the save row.
func (s *mountSave) markdown(b *strings.Builder) {
	fmt.Fprintf(b, "## Saving through the mount\n\nThe large file (%s) written through a read-write mount, as `torch.save` writes a checkpoint "+
		"to a mounted bucket, timed until its close returned (the mount uploads on close: unsigned, with a CRC32C trailer the node checks); "+
		"CPU from /proc/PID/task/*/schedstat. The reference: the same bytes put to MinIO directly by minio-go (its defaults), in the same run.\n\n"+
		"| seconds | MB/s | time vs MinIO direct (%.2f s) | mount CPU per GiB | node CPU per GiB | read back whole through the node |\n|---:|---:|---:|---:|---:|---|\n"+
		"| %.2f | %.0f | %.2fx | %.2f s | %.2f s | %v |\n\n",
		sizeName(s.bytes), s.direct.Seconds(), s.elapsed.Seconds(), float64(s.bytes)/1e6/s.elapsed.Seconds(),
		s.elapsed.Seconds()/s.direct.Seconds(), s.perGiB(s.mountCPU), s.perGiB(s.nodeCPU), s.verified)
}
