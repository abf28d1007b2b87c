// Scoped access keys through a real client: each operation a policy does
// not allow is refused with AccessDenied and changes nothing, at the cache
// or at the origin; what it allows works.
package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/access"
	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/store/catalog"
)

const (
	trainerKey    = "trainer"
	trainerSecret = "trainer-secret-0123"
)

// scopedEnv serves e with a registry holding the test key and a trainer
// who may read and list data/train/ and write and delete ckpt/job1/.
func scopedEnv(t *testing.T) (*env, *access.Registry, *minio.Client, string, string) {
	origin, root := backends[0].open(t)
	return scopedEnvOver(t, gateway.Options{Origin: origin}, root)
}

func scopedEnvOver(t *testing.T, gopts gateway.Options, root string) (*env, *access.Registry, *minio.Client, string, string) {
	reg := accessForTest()
	e := newEnvOver(t, gopts, root, nil, func(o *nodeOptions) { o.Access = reg })
	data, ckpt := e.makeBucket(t, "data"), e.makeBucket(t, "ckpt")
	e.makeBucket(t, "other")
	grants := []access.Grant{
		{Bucket: data, Prefix: "train/", Actions: access.Read | access.List},
		{Bucket: ckpt, Prefix: "job1/", Actions: access.Write | access.Delete | access.Read},
	}
	if err := reg.SetUsers([]access.User{{AccessKey: trainerKey, Secret: trainerSecret, Grants: grants}}); err != nil {
		t.Fatal(err)
	}
	c, err := minio.New(e.addr, &minio.Options{Creds: credentials.NewStaticV4(trainerKey, trainerSecret, ""), Region: testRegion})
	if err != nil {
		t.Fatal(err)
	}
	return e, reg, c, data, ckpt
}

func denied(err error) bool {
	return minio.ToErrorResponse(err).Code == "AccessDenied"
}

func TestScopedKey(t *testing.T) {
	e, _, c, data, ckpt := scopedEnv(t)
	ctx := context.Background()
	sample := []byte("a training sample")
	e.put(t, data, "train/a", sample, minio.PutObjectOptions{})
	e.put(t, data, "secret/a", sample, minio.PutObjectOptions{})

	obj, err := c.GetObject(ctx, data, "train/a", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(obj)
	if err != nil || !bytes.Equal(got, sample) {
		t.Fatalf("granted read: %q, %v", got, err)
	}
	if _, err := c.StatObject(ctx, data, "secret/a", minio.StatObjectOptions{}); !denied(err) {
		t.Fatalf("read outside the prefix: %v, want AccessDenied", err)
	}
	listed := listedKeys(t, c, data, "train/")
	if !slices.Equal(listed, []string{"train/a"}) {
		t.Fatalf("granted list: %v", listed)
	}
	for o := range c.ListObjects(ctx, data, minio.ListObjectsOptions{Recursive: true}) {
		if !denied(o.Err) {
			t.Fatalf("list of the whole bucket: %+v, want AccessDenied", o)
		}
	}

	// Writes: allowed under ckpt/job1/, refused elsewhere, with nothing written.
	if _, err := c.PutObject(ctx, ckpt, "job1/step-1", bytes.NewReader(sample), int64(len(sample)), minio.PutObjectOptions{}); err != nil {
		t.Fatalf("granted write: %v", err)
	}
	for _, target := range [][2]string{{ckpt, "job2/step-1"}, {data, "train/a"}, {data, "train/new"}} {
		_, err := c.PutObject(ctx, target[0], target[1], bytes.NewReader([]byte("attacker")), 8, minio.PutObjectOptions{})
		if !denied(err) {
			t.Fatalf("write to %s/%s: %v, want AccessDenied", target[0], target[1], err)
		}
	}
	e.mustNotExist(t, ckpt, "job2/step-1")
	e.mustNotExist(t, data, "train/new")
	e.mustHold(t, data, "train/a", sample)

	if err := c.RemoveObject(ctx, data, "train/a", minio.RemoveObjectOptions{}); !denied(err) {
		t.Fatalf("delete with a read grant: %v, want AccessDenied", err)
	}
	e.mustHold(t, data, "train/a", sample)

	// A copy needs read on its source and write on its destination.
	_, err = c.CopyObject(ctx, minio.CopyDestOptions{Bucket: ckpt, Object: "job1/copy"}, minio.CopySrcOptions{Bucket: data, Object: "train/a"})
	if err != nil {
		t.Fatalf("granted copy: %v", err)
	}
	_, err = c.CopyObject(ctx, minio.CopyDestOptions{Bucket: ckpt, Object: "job1/stolen"}, minio.CopySrcOptions{Bucket: data, Object: "secret/a"})
	if !denied(err) {
		t.Fatalf("copy from an unreadable source: %v, want AccessDenied", err)
	}
	e.mustNotExist(t, ckpt, "job1/stolen")
}

func TestScopedKeyBuckets(t *testing.T) {
	e, _, c, data, ckpt := scopedEnv(t)
	ctx := context.Background()
	buckets, err := c.ListBuckets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range buckets {
		names = append(names, b.Name)
	}
	slices.Sort(names)
	want := []string{ckpt, data}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("ListBuckets shows %v, want only %v", names, want)
	}
	if err := c.MakeBucket(ctx, uniqueBucket("mine"), minio.MakeBucketOptions{Region: testRegion}); !denied(err) {
		t.Fatalf("create bucket with object grants: %v, want AccessDenied", err)
	}
	if err := c.RemoveBucket(ctx, ckpt); !denied(err) {
		t.Fatalf("delete bucket with a prefix grant: %v, want AccessDenied", err)
	}
	if ok, err := c.BucketExists(ctx, ckpt); !ok || err != nil {
		t.Fatalf("HeadBucket of a granted bucket: %v, %v", ok, err)
	}

	// DeleteObjects: each key is checked on its own.
	e.put(t, ckpt, "job1/x", []byte("x"), minio.PutObjectOptions{})
	e.put(t, ckpt, "job2/y", []byte("y"), minio.PutObjectOptions{})
	objs := make(chan minio.ObjectInfo, 2)
	objs <- minio.ObjectInfo{Key: "job1/x"}
	objs <- minio.ObjectInfo{Key: "job2/y"}
	close(objs)
	var failed []string
	for r := range c.RemoveObjects(ctx, ckpt, objs, minio.RemoveObjectsOptions{}) {
		if !denied(r.Err) {
			t.Errorf("delete of %s: %v, want AccessDenied", r.ObjectName, r.Err)
		}
		failed = append(failed, r.ObjectName)
	}
	if !slices.Equal(failed, []string{"job2/y"}) {
		t.Fatalf("DeleteObjects refused %v, want [job2/y]", failed)
	}
	e.mustNotExist(t, ckpt, "job1/x")
	e.mustHold(t, ckpt, "job2/y", []byte("y"))

	resp, body := e.do(t, rawRequest{method: http.MethodGet, path: "/_granary/status", access: trainerKey, secret: trainerSecret})
	if resp.StatusCode != http.StatusForbidden || errorCode(t, body) != "AccessDenied" {
		t.Fatalf("admin status with no admin grant: %d %s", resp.StatusCode, body)
	}
}

// A user removed while the node runs is refused at its next request.
func TestRemovedUser(t *testing.T) {
	_, reg, c, data, _ := scopedEnv(t)
	ctx := context.Background()
	if _, err := c.BucketExists(ctx, data); err != nil {
		t.Fatal(err)
	}
	if err := reg.SetUsers(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListBuckets(ctx); minio.ToErrorResponse(err).Code != "InvalidAccessKeyId" {
		t.Fatalf("removed user lists buckets: %v", err)
	}
}

func listedKeys(t *testing.T, c *minio.Client, bucket, prefix string) []string {
	t.Helper()
	var keys []string
	for o := range c.ListObjects(context.Background(), bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			t.Fatalf("list %s/%s: %v", bucket, prefix, o.Err)
		}
		keys = append(keys, o.Key)
	}
	return keys
}

// mustHold checks through the unrestricted client that bucket/key holds data.
func (e *env) mustHold(t *testing.T, bucket, key string, data []byte) {
	t.Helper()
	obj, err := e.client.GetObject(context.Background(), bucket, key, minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(obj)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("%s/%s holds %q (%v), want %q", bucket, key, got, err, data)
	}
}

// mustNotExist checks that bucket/key does not exist.
func (e *env) mustNotExist(t *testing.T, bucket, key string) {
	t.Helper()
	_, err := e.client.StatObject(context.Background(), bucket, key, minio.StatObjectOptions{})
	if minio.ToErrorResponse(err).Code != "NoSuchKey" && !errors.Is(err, io.EOF) {
		t.Fatalf("%s/%s: %v, want NoSuchKey", bucket, key, err)
	}
}

// An admin grant on a prefix allows admin calls there and nowhere else,
// and the list of warm-ups shows only what it covers.
func TestScopedAdmin(t *testing.T) {
	base, root := openS3(t)
	cat, err := catalog.Open(catalog.Options{Path: filepath.Join(t.TempDir(), "c.db"), Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	e, reg, _, data, ckpt := scopedEnvOver(t, gateway.Options{Origin: base, Catalog: cat}, root)
	grants := []access.Grant{{Bucket: data, Prefix: "train/", Actions: access.Admin}}
	if err := reg.SetUsers([]access.User{{AccessKey: "ops-team", Secret: "ops-secret-0123", Grants: grants}}); err != nil {
		t.Fatal(err)
	}
	warm := func(method, query, key, secret string) (int, []byte) {
		resp, body := e.do(t, rawRequest{method: method, path: "/_granary/warm", query: query, access: key, secret: secret})
		return resp.StatusCode, body
	}
	as := func(method, query string) (int, []byte) { return warm(method, query, "ops-team", "ops-secret-0123") }
	jobID := func(body []byte) string {
		var st struct{ ID string }
		if err := json.Unmarshal(body, &st); err != nil || st.ID == "" {
			t.Fatalf("warm-up answer %s: %v", body, err)
		}
		return st.ID
	}
	code, body := as(http.MethodPost, "bucket="+data+"&prefix=train/")
	if code != http.StatusOK {
		t.Fatalf("warm inside the grant: %d %s", code, body)
	}
	mine := jobID(body)
	for _, q := range []string{"bucket=" + data + "&prefix=", "bucket=" + data + "&prefix=tr", "bucket=" + ckpt + "&prefix=train/"} {
		if code, body := as(http.MethodPost, q); code != http.StatusForbidden || errorCode(t, body) != "AccessDenied" {
			t.Fatalf("warm %s: %d %s, want AccessDenied", q, code, body)
		}
	}
	code, body = warm(http.MethodPost, "bucket="+ckpt+"&prefix=job1/", "", "")
	if code != http.StatusOK {
		t.Fatalf("warm with the node's key: %d %s", code, body)
	}
	theirs := jobID(body)
	code, body = as(http.MethodGet, "")
	if code != http.StatusOK || !bytes.Contains(body, []byte(mine)) || bytes.Contains(body, []byte(theirs)) {
		t.Fatalf("scoped list of warm-ups: %d %s", code, body)
	}
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		if code, body := as(m, "id="+theirs); code != http.StatusForbidden {
			t.Fatalf("%s of another's warm-up: %d %s", m, code, body)
		}
	}
	if code, body := as(http.MethodGet, "id="+mine); code != http.StatusOK {
		t.Fatalf("status of its own warm-up: %d %s", code, body)
	}
}
