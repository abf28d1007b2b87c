// The hot path: warm small-object GETs served from the RAM tier, through
// presigned URLs or header-signed requests (the server verifies every
// signature) over keep-alive connections.
package api

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/signer"
	"github.com/valyala/fasthttp"

	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/store/ram"
)

func BenchmarkGetSmallWarm(b *testing.B) {
	e, bucket := warmObject(b)
	u, err := e.client.PresignedGetObject(context.Background(), bucket, "obj", time.Hour, nil)
	if err != nil {
		b.Fatal(err)
	}
	url := u.String()
	benchWarmGet(b, func(req *fasthttp.Request) { req.SetRequestURI(url) })
}

// BenchmarkGetSmallWarmSigned is BenchmarkGetSmallWarm with the signature
// in the Authorization header and the header fields boto3 sends.
func BenchmarkGetSmallWarmSigned(b *testing.B) {
	e, bucket := warmObject(b)
	hr, err := http.NewRequest(http.MethodGet, "http://"+e.addr+"/"+bucket+"/obj", nil)
	if err != nil {
		b.Fatal(err)
	}
	hr.Header.Set("User-Agent", "Boto3/1.35.0 md/Botocore#1.35.0 ua/2.0 os/linux#6.8.0 md/arch#x86_64 lang/python#3.12.3 md/pyimpl#CPython cfg/retry-mode#legacy Botocore/1.35.0")
	hr.Header.Set("Accept-Encoding", "identity")
	hr.Header.Set("Amz-Sdk-Invocation-Id", "0b4f6d4e-7f1a-4c43-9a57-3c0e7d1f2b9a")
	hr.Header.Set("Amz-Sdk-Request", "attempt=1; max=5")
	hr.Header.Set("X-Amz-Content-Sha256", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
	signed := signer.SignV4(*hr, testAccess, testSecret, "", testRegion)
	benchWarmGet(b, func(req *fasthttp.Request) {
		req.SetRequestURI(signed.URL.String())
		for k, vs := range signed.Header {
			req.Header.Set(k, vs[0])
		}
	})
}

// warmObject serves a 4 KiB object from the RAM tier.
func warmObject(b *testing.B) (*env, string) {
	origin, root := openFS(b)
	e := newEnvOver(b, gateway.Options{Origin: origin, RAM: ram.New(ram.Options{Capacity: 64 << 20})}, root, nil)
	bucket := e.makeBucket(b, "bench")
	e.put(b, bucket, "obj", randomBytes(warmSize), minio.PutObjectOptions{})
	return e, bucket
}

const warmSize = 4 << 10

// benchWarmGet GETs the object of warmObject, each request set up by mk,
// from 8 goroutines per CPU over keep-alive connections.
func benchWarmGet(b *testing.B, mk func(*fasthttp.Request)) {
	client := &fasthttp.Client{MaxConnsPerHost: 64}
	get := func(req *fasthttp.Request, resp *fasthttp.Response) {
		if err := client.Do(req, resp); err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode() != 200 || len(resp.Body()) != warmSize {
			b.Fatalf("GET: %d, %d bytes", resp.StatusCode(), len(resp.Body()))
		}
	}
	warm := fasthttp.AcquireRequest()
	mk(warm)
	get(warm, fasthttp.AcquireResponse())
	b.SetBytes(warmSize)
	b.ReportAllocs()
	b.SetParallelism(8)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		mk(req)
		for pb.Next() {
			get(req, resp)
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
}
