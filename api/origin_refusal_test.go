// An origin's refusal of a request as the client's mistake, through the
// real door with minio-go: the client gets the origin's 4xx and code (as
// MinIO answers it directly), not 500 InternalError, and the origin's
// health and error counts do not change.
package api

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/granary-dev/granary/gateway"
)

// refusals are requests MinIO refuses with a 4xx of a code Granary has no
// sentinel for (XMinioInvalidResourceName: a ".." component, which MinIO
// also finds between backslashes).
var refusals = []struct {
	name string
	call func(ctx context.Context, cl *minio.Client, bucket string) error
}{
	{"PUT a key of backslashes and ..", func(ctx context.Context, cl *minio.Client, bucket string) error {
		_, err := cl.PutObject(ctx, bucket, `a\..\b`, bytes.NewReader([]byte("x")), 1, minio.PutObjectOptions{})
		return err
	}},
	{"GET a key of backslashes and ..", func(ctx context.Context, cl *minio.Client, bucket string) error {
		obj, err := cl.GetObject(ctx, bucket, `..\x`, minio.GetObjectOptions{})
		if err == nil {
			_, err = io.ReadAll(obj) // a GET, whose error has a body (Stat would HEAD)
			obj.Close()
		}
		return err
	}},
	{"LIST prefix=../../", func(ctx context.Context, cl *minio.Client, bucket string) error {
		return firstListError(cl.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: "../../", MaxKeys: 10}))
	}},
	{"LIST start-after=../../", func(ctx context.Context, cl *minio.Client, bucket string) error {
		return firstListError(cl.ListObjects(ctx, bucket, minio.ListObjectsOptions{StartAfter: "../../", MaxKeys: 10}))
	}},
}

// firstListError drains a listing and returns its first error.
func firstListError(ch <-chan minio.ObjectInfo) error {
	var err error
	for obj := range ch {
		if err == nil {
			err = obj.Err
		}
	}
	return err
}

func TestOriginRefusalReachesTheClient(t *testing.T) {
	m := sharedMinIO(t)
	origin, _ := openS3(t)
	reg := prometheus.NewRegistry()
	e := newEnvOver(t, gateway.Options{Origin: origin, Registerer: reg}, "", nil,
		func(o *nodeOptions) { o.Registerer, o.Gatherer = reg, reg })
	bucket := e.makeBucket(t, "refusal")
	direct, err := minio.New(m.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(m.AccessKey, m.SecretKey, ""), Region: testRegion})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range refusals {
		want := minio.ToErrorResponse(c.call(ctx, direct, bucket))
		if want.StatusCode/100 != 4 || want.Code == "" {
			t.Fatalf("%s, MinIO directly: %d %q; this test needs a 4xx refusal", c.name, want.StatusCode, want.Code)
		}
		got := minio.ToErrorResponse(c.call(ctx, e.client, bucket))
		if got.StatusCode != want.StatusCode || got.Code != want.Code {
			t.Errorf("%s through Granary: %d %s (%s), want MinIO's %d %s", c.name, got.StatusCode, got.Code, got.Message,
				want.StatusCode, want.Code)
		}
	}
	body := metricsOf(t, e)
	if strings.Contains(body, `result="error"`) || !strings.Contains(body, `result="refused"`) {
		t.Errorf("origin refusals not counted as refused:\n%s", grepLines(body, "granary_origin_requests_total"))
	}
}

// metricsOf is e's /metrics page.
func metricsOf(t *testing.T, e *env) string {
	t.Helper()
	resp, body := e.do(t, rawRequest{method: http.MethodGet, path: "/metrics", unsigned: true})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	return string(body)
}

// grepLines is the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
