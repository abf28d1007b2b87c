// Benchmarks: Verify of a header-signed GET (minio-go's, and boto3's with
// its eight header fields), a presigned GET and a SigV2 GET (the
// per-request cost), and the streaming decoders' throughput against the
// SHA-256 of the same bytes measured in the same run (the physical limit
// of the signed mode, which must hash every byte).
package sigv4

import (
	"crypto/sha256"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/minio/minio-go/v7/pkg/signer"
)

func BenchmarkVerifyHeaderGet(b *testing.B) {
	req := newHTTPRequest(b, http.MethodGet, "http://"+testHost+"/bucket/datasets/imagenet/train/n01440764/img_0001.JPEG", nil)
	req.Header.Set("X-Amz-Content-Sha256", emptySHA256)
	req.Header.Set("User-Agent", "MinIO (linux; amd64) minio-go/v7.4.1")
	benchVerify(b, fixedVerifier(time.Now()), fromHTTP(signer.SignV4(*req, testAK, testSK, "", testRegion)))
}

func BenchmarkVerifyPresignedGet(b *testing.B) {
	r := presigned(b, http.MethodGet, "http://"+testHost+"/bucket/datasets/shard-00042.tar", 3600, nil)
	benchVerify(b, fixedVerifier(time.Now()), r)
}

func BenchmarkVerifyBoto3Get(b *testing.B) {
	now := time.Now()
	benchVerify(b, fixedVerifier(now), boto3Get(now))
}

func BenchmarkVerifySigV2Get(b *testing.B) {
	now := time.Now()
	benchVerify(b, fixedVerifier(now), sigV2Get(now))
}

// benchVerify verifies r over and over, its key already cached, into
// one Result as the api does.
func benchVerify(b *testing.B, v *Verifier, r *Request) {
	mustVerify(b, v, r)
	var res Result
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := v.VerifyInto(r, &res); err != nil {
			b.Fatal(err)
		}
	}
}

const benchBody = 8 << 20

func BenchmarkSHA256Baseline(b *testing.B) {
	data := payloadOf(benchBody)
	b.SetBytes(benchBody)
	for b.Loop() {
		sha256.Sum256(data)
	}
}

func BenchmarkStreamingSigned(b *testing.B) {
	data := payloadOf(benchBody)
	w := streaming(b, data, nil)
	benchBodyRead(b, w)
}

func BenchmarkUnsignedTrailerCRC32C(b *testing.B) {
	data := payloadOf(benchBody)
	w := unsignedTrailer(b, data, trailerOf("x-amz-checksum-crc32c", data))
	benchBodyRead(b, w)
}

func BenchmarkUnsignedPayload(b *testing.B) {
	data := payloadOf(benchBody)
	w := wireRequest{signedPut(b, "http://"+testHost+"/b/o", data, unsignedPayload, nil), data}
	benchBodyRead(b, w)
}

// benchBodyRead verifies w and copies its body to io.Discard.
func benchBodyRead(b *testing.B, w wireRequest) {
	v := newVerifier()
	buf := make([]byte, 32<<10)
	b.SetBytes(benchBody)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r := w.mk(nil)
		res, err := v.Verify(r)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{res.Body}, buf)
		if err != nil || n != benchBody {
			b.Fatal(n, err)
		}
	}
}
