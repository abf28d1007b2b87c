// The hot path: warm small-object GETs served from the RAM tier, through
// presigned URLs (the server verifies every signature) over keep-alive
// connections.
package api

import (
	"context"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/valyala/fasthttp"

	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/store/ram"
)

func BenchmarkGetSmallWarm(b *testing.B) {
	origin, root := openFS(b)
	e := newEnvOver(b, gateway.Options{Origin: origin, RAM: ram.New(ram.Options{Capacity: 64 << 20})}, root, nil)
	bucket := e.makeBucket(b, "bench")
	const size = 4 << 10
	e.put(b, bucket, "obj", randomBytes(size), minio.PutObjectOptions{})
	u, err := e.client.PresignedGetObject(context.Background(), bucket, "obj", time.Hour, nil)
	if err != nil {
		b.Fatal(err)
	}
	url := u.String()
	client := &fasthttp.Client{MaxConnsPerHost: 64}
	get := func(req *fasthttp.Request, resp *fasthttp.Response) {
		if err := client.Do(req, resp); err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode() != 200 || len(resp.Body()) != size {
			b.Fatalf("GET: %d, %d bytes", resp.StatusCode(), len(resp.Body()))
		}
	}
	warm := fasthttp.AcquireRequest()
	warm.SetRequestURI(url)
	get(warm, fasthttp.AcquireResponse())
	b.SetBytes(size)
	b.ReportAllocs()
	b.SetParallelism(8)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI(url)
		for pb.Next() {
			get(req, resp)
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
}
