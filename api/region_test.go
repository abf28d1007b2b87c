// The credential scope's region: a signature for another region than the
// node's is refused as AWS refuses it (header and presigned forms), and an
// SDK that does not know the node's region learns it from the answer.
package api

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/signer"
)

// regionError is an S3 error body with the Region element AWS adds.
type regionError struct {
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
	Region  string `xml:"Region"`
}

func TestWrongRegionInHeader(t *testing.T) {
	e := newEnv(t, backends[0])
	req := e.buildRequest(t, rawRequest{method: http.MethodGet, path: "/", unsigned: true,
		header: http.Header{"X-Amz-Content-Sha256": {emptySHA256Hex}}})
	req = signer.SignV4(*req, testAccess, testSecret, "", "eu-west-1")
	checkWrongRegion(t, req, "AuthorizationHeaderMalformed",
		"The authorization header is malformed; the region 'eu-west-1' is wrong; expecting 'us-east-1'", "us-east-1")
}

func TestWrongRegionPresigned(t *testing.T) {
	e := newEnv(t, backends[0], func(o *nodeOptions) { o.Region = "eu-north-1" })
	cl, err := minio.New(e.addr, &minio.Options{Creds: credentials.NewStaticV4(testAccess, testSecret, ""), Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	u, err := cl.PresignedGetObject(context.Background(), "any-bucket", "key", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, u.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	checkWrongRegion(t, req, "AuthorizationQueryParametersError",
		"Error parsing the X-Amz-Credential parameter; the region 'us-east-1' is wrong; expecting 'eu-north-1'", "eu-north-1")
}

// checkWrongRegion sends req and checks the 400 answer.
func checkWrongRegion(t *testing.T, req *http.Request, code, msg, region string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var got regionError
	if err := xml.Unmarshal(body, &got); err != nil {
		t.Fatalf("%d %q: %v", resp.StatusCode, body, err)
	}
	if resp.StatusCode != http.StatusBadRequest || got != (regionError{code, msg, region}) {
		t.Fatalf("wrong region: %d %+v\nwant 400 %+v", resp.StatusCode, got, regionError{code, msg, region})
	}
}

// TestRegionLearnedFromError: minio-go, told no region, asks for a
// bucket's location signed for us-east-1, reads the node's region from the
// refusal, and signs its PUT and GET for that region.
func TestRegionLearnedFromError(t *testing.T) {
	const region = "eu-west-3"
	e := newEnv(t, backends[0], func(o *nodeOptions) { o.Region = region })
	ctx := context.Background()
	regional, err := minio.New(e.addr, &minio.Options{Creds: credentials.NewStaticV4(testAccess, testSecret, ""), Region: region})
	if err != nil {
		t.Fatal(err)
	}
	bucket := uniqueBucket("region")
	if err := regional.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: region}); err != nil {
		t.Fatal(err)
	}
	unaware, err := minio.New(e.addr, &minio.Options{Creds: credentials.NewStaticV4(testAccess, testSecret, "")})
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("signed for the region the node named")
	if _, err := unaware.PutObject(ctx, bucket, "k", bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
		t.Fatalf("put without a region: %v", err)
	}
	obj, err := unaware.GetObject(ctx, bucket, "k", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	if got, err := io.ReadAll(obj); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get without a region: %q %v", got, err)
	}
}

const emptySHA256Hex = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
