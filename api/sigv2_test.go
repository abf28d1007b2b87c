// Signature Version 2 through the real door: minio-go signing with V2
// credentials (header and presigned URLs) against a node, the same access
// policies as SigV4 for a scoped key, and AWS's answers to a tampered or
// expired URL.
package api

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/signer"
)

// v2Client is a minio-go client of e that signs with SigV2.
func v2Client(t testing.TB, e *env, ak, sk string) *minio.Client {
	t.Helper()
	c, err := minio.New(e.addr, &minio.Options{Creds: credentials.NewStaticV2(ak, sk, ""), Region: testRegion})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSigV2Client(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t, b)
			c := v2Client(t, e, testAccess, testSecret)
			ctx := context.Background()
			bucket := uniqueBucket("v2")
			if err := c.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: testRegion}); err != nil {
				t.Fatal(err)
			}
			data := randomBytes(100_000)
			for _, key := range []string{"plain", "a b/c+d&e=f", "日本/語"} {
				if _, err := c.PutObject(ctx, bucket, key, bytes.NewReader(data), int64(len(data)),
					minio.PutObjectOptions{UserMetadata: map[string]string{"who": "v2"}}); err != nil {
					t.Fatalf("put %q: %v", key, err)
				}
				obj, err := c.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(obj)
				if err != nil || !bytes.Equal(got, data) {
					t.Fatalf("get %q: %d bytes, %v", key, len(got), err)
				}
				st, err := c.StatObject(ctx, bucket, key, minio.StatObjectOptions{})
				if err != nil || st.UserMetadata["Who"] != "v2" {
					t.Fatalf("stat %q: %+v, %v", key, st.UserMetadata, err)
				}
			}
			n := 0
			for o := range c.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
				if o.Err != nil {
					t.Fatal(o.Err)
				}
				n++
			}
			if n != 3 {
				t.Fatalf("listed %d objects, want 3", n)
			}
			if err := c.RemoveObject(ctx, bucket, "plain", minio.RemoveObjectOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.StatObject(ctx, bucket, "plain", minio.StatObjectOptions{}); minioCode(err) != "NoSuchKey" {
				t.Fatalf("after delete: %v", err)
			}
			bad := v2Client(t, e, testAccess, testSecret+"x")
			obj, err := bad.GetObject(ctx, bucket, "a b/c+d&e=f", minio.GetObjectOptions{})
			if err == nil {
				_, err = io.ReadAll(obj)
			}
			if minioCode(err) != "SignatureDoesNotMatch" {
				t.Fatalf("wrong secret: %v", err)
			}
		})
	}
}

func TestSigV2Presigned(t *testing.T) {
	e := newEnv(t, backends[0])
	c := v2Client(t, e, testAccess, testSecret)
	ctx := context.Background()
	bucket := e.makeBucket(t, "v2p")
	data := []byte("presigned with signature version 2")
	e.put(t, bucket, "dir/obj one", data, minio.PutObjectOptions{})

	u, err := c.PresignedGetObject(ctx, bucket, "dir/obj one", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	if u.Query().Get("AWSAccessKeyId") == "" {
		t.Fatalf("not a SigV2 URL: %s", u)
	}
	resp, body := httpGet(t, u.String())
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, data) {
		t.Fatalf("presigned GET: %d %q", resp.StatusCode, body)
	}

	tampered := *u
	tampered.Path = "/" + bucket + "/dir/obj two"
	resp, body = httpGet(t, tampered.String())
	expectError(t, resp, body, http.StatusForbidden, "SignatureDoesNotMatch")

	q := u.Query()
	q.Set("Expires", strconv.FormatInt(time.Now().Add(-time.Minute).Unix(), 10))
	expired := *u
	expired.RawQuery = q.Encode()
	resp, body = httpGet(t, expired.String())
	expectError(t, resp, body, http.StatusForbidden, "AccessDenied")
	if !bytes.Contains(body, []byte("Request has expired")) {
		t.Fatalf("expired URL: %s", body)
	}

	// A URL signed to live ten years is refused, as SigV4 refuses one of
	// more than seven days; seven days are taken.
	for _, c := range []struct {
		life   time.Duration
		status int
	}{{10 * 365 * 24 * time.Hour, http.StatusForbidden}, {7 * 24 * time.Hour, http.StatusOK}} {
		req, err := http.NewRequest(http.MethodGet, "http://"+e.addr+"/"+bucket+"/dir/obj%20one", nil)
		if err != nil {
			t.Fatal(err)
		}
		signed := signer.PreSignV2(*req, testAccess, testSecret, int64(c.life/time.Second), false)
		resp, body = httpGet(t, signed.URL.String())
		if resp.StatusCode != c.status {
			t.Errorf("a SigV2 URL living %v: %d %q, want %d", c.life, resp.StatusCode, body, c.status)
		}
		if c.status == http.StatusForbidden {
			expectError(t, resp, body, http.StatusForbidden, "AccessDenied")
		}
	}
}

// A scoped key signing with SigV2 is the same user with the same grants.
func TestSigV2ScopedKey(t *testing.T) {
	e, _, _, data, ckpt := scopedEnv(t)
	c := v2Client(t, e, trainerKey, trainerSecret)
	ctx := context.Background()
	e.put(t, data, "train/a", []byte("a"), minio.PutObjectOptions{})
	e.put(t, data, "secret/a", []byte("s"), minio.PutObjectOptions{})

	if _, err := c.StatObject(ctx, data, "train/a", minio.StatObjectOptions{}); err != nil {
		t.Fatalf("granted read: %v", err)
	}
	if _, err := c.StatObject(ctx, data, "secret/a", minio.StatObjectOptions{}); !denied(err) {
		t.Fatalf("read outside the prefix: %v, want AccessDenied", err)
	}
	if _, err := c.PutObject(ctx, data, "train/b", bytes.NewReader([]byte("x")), 1, minio.PutObjectOptions{}); !denied(err) {
		t.Fatalf("write without the grant: %v, want AccessDenied", err)
	}
	if _, err := e.get(t, data, "train/b", minio.GetObjectOptions{}); minioCode(err) != "NoSuchKey" {
		t.Fatalf("a refused write left an object: %v", err)
	}
	if _, err := c.PutObject(ctx, ckpt, "job1/w", bytes.NewReader([]byte("w")), 1, minio.PutObjectOptions{}); err != nil {
		t.Fatalf("granted write: %v", err)
	}
	u, err := c.PresignedGetObject(ctx, data, "secret/a", time.Hour, url.Values{})
	if err != nil {
		t.Fatal(err)
	}
	resp, body := httpGet(t, u.String())
	expectError(t, resp, body, http.StatusForbidden, "AccessDenied")
}

// httpGet GETs u with a plain client and reads the body.
func httpGet(t testing.TB, u string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// SigV2 signs a virtual-host request's resource with the bucket of its
// Host: minio-go's V2 client in DNS style puts, gets, lists and presigns.
func TestSigV2VirtualHost(t *testing.T) {
	const domain = "s3.granary.test"
	e := newEnv(t, backends[0], func(o *nodeOptions) { o.Domains = []string{domain} })
	_, port, _ := net.SplitHostPort(e.addr)
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, e.addr) // every name resolves to the listener
	}}
	defer tr.CloseIdleConnections()
	c, err := minio.New(domain+":"+port, &minio.Options{
		Creds: credentials.NewStaticV2(testAccess, testSecret, ""), Region: testRegion,
		Transport: tr, BucketLookup: minio.BucketLookupDNS,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	bucket := e.makeBucket(t, "v2vh")
	data := []byte("virtual host, signature version 2")
	if _, err := c.PutObject(ctx, bucket, "a/b c", bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
		t.Fatalf("put: %v", err)
	}
	obj, err := c.GetObject(ctx, bucket, "a/b c", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(obj)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get: %q, %v", got, err)
	}
	n := 0
	for o := range c.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		n++
	}
	if n != 1 {
		t.Fatalf("listed %d objects", n)
	}
	u, err := c.PresignedGetObject(ctx, bucket, "a/b c", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: tr}).Get(u.String())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, data) {
		t.Fatalf("presigned vhost GET %s: %d %q", u, resp.StatusCode, body)
	}
}
