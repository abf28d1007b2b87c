// UploadPart streams: a 256 MiB part goes from the client to the origin
// without the process heap growing by more than a few tens of MiB.
package api

import (
	"crypto/md5"
	"encoding/hex"
	"hash"
	"io"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

// maxPartHeapGrowth is how much HeapInuse may rise while a part streams:
// buffers per connection and per origin request, never the part.
const maxPartHeapGrowth = 48 << 20

func TestUploadPartMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 256 MiB per origin")
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := newMultipartEnv(t, b)
			bucket := e.makeBucket(t, "mpmem")
			id := e.newUpload(t, bucket, "big", minio.PutObjectOptions{})
			const size = 256 << 20
			body := newPatternReader(size)
			req := e.buildRequest(t, rawRequest{method: http.MethodPut, path: "/" + bucket + "/big",
				query: partQuery("1", id), unsigned: true, header: http.Header{"X-Amz-Content-Sha256": {"UNSIGNED-PAYLOAD"}}})
			req.Body, req.ContentLength = io.NopCloser(body), size
			req = signV4(req)

			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			peak := sampleHeapPeak()
			resp, respBody := roundTrip(t, req)
			high := peak()
			if resp.StatusCode != 200 {
				t.Fatalf("UploadPart: %d %q", resp.StatusCode, respBody)
			}
			if got, want := resp.Header.Get("ETag"), `"`+hex.EncodeToString(body.md5.Sum(nil))+`"`; got != want {
				t.Fatalf("ETag %s, want %s", got, want)
			}
			growth := int64(high) - int64(before.HeapInuse)
			t.Logf("HeapInuse %d MiB before, peak %d MiB while a %d MiB part streamed (growth %d MiB)",
				before.HeapInuse>>20, high>>20, size>>20, growth>>20)
			if growth > maxPartHeapGrowth {
				t.Errorf("heap grew by %d MiB, limit %d MiB: the part is buffered", growth>>20, maxPartHeapGrowth>>20)
			}
		})
	}
}

// sampleHeapPeak samples HeapInuse every few milliseconds until the
// returned function is called, which stops the sampler and returns the
// highest value seen.
func sampleHeapPeak() func() uint64 {
	stop := make(chan struct{})
	result := make(chan uint64)
	go func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		var peak uint64
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
			select {
			case <-stop:
				result <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 {
		close(stop)
		return <-result
	}
}

// patternReader yields n bytes cycling through a random 1 MiB block, and
// hashes what it yields, so a large body costs no memory of its own.
type patternReader struct {
	block []byte
	off   int
	left  int64
	md5   hash.Hash
}

func newPatternReader(n int64) *patternReader {
	return &patternReader{block: randomBytes(1 << 20), left: n, md5: md5.New()}
}

func (p *patternReader) Read(b []byte) (int, error) {
	if p.left == 0 {
		return 0, io.EOF
	}
	if int64(len(b)) > p.left {
		b = b[:p.left]
	}
	n := copy(b, p.block[p.off:])
	p.off = (p.off + n) % len(p.block)
	p.left -= int64(n)
	p.md5.Write(b[:n])
	return n, nil
}
