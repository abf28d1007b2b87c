// With the origin gone, a node keeps serving what it holds and answers
// everything else at once with 503, never a hang.
package api

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/store/origin/s3"
	"github.com/granary-dev/granary/store/ram"
)

func TestOriginDownServesCacheAnswers503(t *testing.T) {
	m := miniotest.StartT(t) // this test's own server: it is stopped below
	o, err := s3.New(s3.Options{Endpoint: m.Endpoint, Region: testRegion, AccessKey: m.AccessKey, SecretKey: m.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	var ahead atomic.Int64 // how far the node's clock is ahead of time.Now
	now := func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	e := newEnvOver(t, gateway.Options{Origin: o, RAM: ram.New(ram.Options{Capacity: 64 << 20}), Now: now,
		Freshness: gateway.Freshness{Mode: gateway.TTL, TTL: time.Minute}}, "", nil)
	bucket := e.makeBucket(t, "down")
	data := randomBytes(200 << 10)
	e.put(t, bucket, "cached", data, minio.PutObjectOptions{})
	// Written straight to the origin: a write through the node would be
	// cached by it.
	direct, err := minio.New(m.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(m.AccessKey, m.SecretKey, ""), Region: testRegion})
	if err != nil {
		t.Fatal(err)
	}
	cold := []byte("never through the node")
	if _, err := direct.PutObject(context.Background(), bucket, "cold", bytes.NewReader(cold), int64(len(cold)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := e.get(t, bucket, "cached", minio.GetObjectOptions{}); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("warm-up read: %d bytes, %v", len(got), err)
	}
	m.Stop()
	ahead.Store(int64(2 * time.Minute)) // past the TTL: metadata must be revalidated
	// A client that does not retry, so the time measured is the node's.
	e.client, err = minio.New(e.addr, &minio.Options{
		Creds: credentials.NewStaticV4(testAccess, testSecret, ""), Region: testRegion, MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}

	if got, err := e.get(t, bucket, "cached", minio.GetObjectOptions{}); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("cached object with the origin down: %d bytes, %v", len(got), err)
	}
	start := time.Now()
	_, err = e.get(t, bucket, "cold", minio.GetObjectOptions{})
	if code := minioCode(err); code != "ServiceUnavailable" {
		t.Fatalf("uncached object with the origin down: code %q (%v), want ServiceUnavailable", code, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the 503 took %v", d)
	}
	_, err = e.client.StatObject(context.Background(), bucket, "cold", minio.StatObjectOptions{})
	if resp := minio.ToErrorResponse(err); resp.StatusCode != 503 {
		t.Fatalf("HEAD of an uncached object with the origin down: status %d (%v), want 503", resp.StatusCode, err)
	}
}
