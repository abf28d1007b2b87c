// A Put of known size reaches MinIO as one streamed PUT, over HTTP (signed
// chunk by chunk) and over HTTPS (unsigned payload): the origin names it by
// its MD5, as S3 names a client's PUT, and the body is read once and never
// held whole in memory.
package s3

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/internal/testcerts"
	"github.com/granary-dev/granary/store"
)

func TestPutIsOneStreamedPUT(t *testing.T) {
	ca := testcerts.NewCA(t)
	certs := t.TempDir()
	ca.Leaf(t, filepath.Join(certs, "public.crt"), filepath.Join(certs, "private.key"))
	secure := miniotest.StartTWith(t, miniotest.Options{CertsDir: certs, RootCAs: ca.Pool()})
	for _, c := range []struct {
		name string
		opts Options
	}{
		{"HTTP", Options{PartSize: 5 << 20}},
		{"HTTPS", Options{Endpoint: secure.Endpoint, Secure: true, RootCAs: ca.Pool(),
			AccessKey: secure.AccessKey, SecretKey: secure.SecretKey, PartSize: 5 << 20}},
	} {
		t.Run(c.name, func(t *testing.T) { testOnePUT(t, newOrigin(t, c.opts)) })
	}
}

// testOnePUT puts an object of nine parts' size through o and checks that
// it went as one request, is named by its MD5 and was not buffered.
func testOnePUT(t *testing.T, o *Origin) {
	ctx := context.Background()
	bucket := fmt.Sprintf("whole-%d", time.Now().UnixNano())
	if err := o.MakeBucket(ctx, bucket); err != nil {
		t.Fatal(err)
	}
	const size = 48 << 20
	sum := md5.New()
	body := io.TeeReader(io.LimitReader(rand.NewChaCha8([32]byte{7}), size), sum)
	before := o.Requests()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	info, err := o.Put(ctx, bucket, "ckpt", body, size, store.ObjectMeta{})
	runtime.ReadMemStats(&m1)
	if err != nil {
		t.Fatal(err)
	}
	want := hex.EncodeToString(sum.Sum(nil))
	if info.ETag != want {
		t.Errorf("Put answered ETag %s, want the body's MD5 %s", info.ETag, want)
	}
	if n := o.Requests() - before; n != 1 {
		t.Errorf("Put sent %d requests, want one PUT", n)
	}
	// A body buffered whole (or read twice to be signed) would allocate at
	// least its size.
	alloc := m1.TotalAlloc - m0.TotalAlloc
	t.Logf("Put of %d MiB allocated %d KiB", size>>20, alloc>>10)
	if alloc > size/4 {
		t.Errorf("Put of %d bytes allocated %d bytes: the body was buffered", size, alloc)
	}
	st, err := o.Stat(ctx, bucket, "ckpt")
	if err != nil || st.ETag != want || st.Size != size {
		t.Fatalf("Stat = ETag %s size %d (%v), want %s %d", st.ETag, st.Size, err, want, size)
	}
	if err := o.Delete(ctx, bucket, "ckpt"); err != nil {
		t.Fatal(err)
	}
	if err := o.RemoveBucket(ctx, bucket); err != nil {
		t.Fatal(err)
	}
}
