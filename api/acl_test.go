// ACLs through the real server: the canned private ACL is read and set on
// buckets and objects as MinIO answers them, any other ACL is
// NotImplemented (logged as a client matter), each with the rights of the
// read or write it stands for; and s3-tests'
// test_bucket_create_special_key_names run by boto3.
package api

import (
	"encoding/xml"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/granary-dev/granary/access"
	"github.com/granary-dev/granary/internal/syncbuf"
	"github.com/rs/zerolog"
)

// aclAnswer is what a client reads of an AccessControlPolicy.
type aclAnswer struct {
	Owner struct {
		ID string `xml:"ID"`
	} `xml:"Owner"`
	Grants []struct {
		Grantee struct {
			Type string `xml:"http://www.w3.org/2001/XMLSchema-instance type,attr"`
			ID   string `xml:"ID"`
		} `xml:"Grantee"`
		Permission string `xml:"Permission"`
	} `xml:"AccessControlList>Grant"`
}

// wantPrivateACL checks an answer is the owner's one FULL_CONTROL grant.
func wantPrivateACL(t *testing.T, what string, resp *http.Response, body []byte) {
	t.Helper()
	var acl aclAnswer
	if resp.StatusCode != http.StatusOK {
		t.Errorf("%s: %d %q, want 200", what, resp.StatusCode, body)
		return
	}
	if err := xml.Unmarshal(body, &acl); err != nil {
		t.Fatalf("%s: %v in %q", what, err, body)
	}
	if acl.Owner.ID == "" || len(acl.Grants) != 1 || acl.Grants[0].Permission != "FULL_CONTROL" ||
		acl.Grants[0].Grantee.ID != acl.Owner.ID || acl.Grants[0].Grantee.Type != "CanonicalUser" {
		t.Errorf("%s: not the owner's FULL_CONTROL: %q", what, body)
	}
}

const (
	policyFullControl = `<AccessControlPolicy><Owner><ID>x</ID></Owner><AccessControlList><Grant>` +
		`<Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser"><ID>x</ID></Grantee>` +
		`<Permission>FULL_CONTROL</Permission></Grant></AccessControlList></AccessControlPolicy>`
	policyRead = `<AccessControlPolicy><Owner><ID>x</ID></Owner><AccessControlList><Grant>` +
		`<Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="Group"><URI>http://acs.amazonaws.com/groups/global/AllUsers</URI></Grantee>` +
		`<Permission>READ</Permission></Grant></AccessControlList></AccessControlPolicy>`
)

func TestACL(t *testing.T) {
	var logs syncbuf.Buffer
	e := newEnv(t, backends[0], func(o *nodeOptions) { o.Logger = zerolog.New(&logs).Level(zerolog.DebugLevel) })
	bucket := e.makeBucket(t, "acl")
	e.put(t, bucket, "k", []byte("v"), minio.PutObjectOptions{})
	obj, bkt := "/"+bucket+"/k", "/"+bucket

	for _, path := range []string{obj, bkt} {
		resp, body := e.do(t, rawRequest{method: http.MethodGet, path: path, query: "acl"})
		wantPrivateACL(t, "GET "+path+"?acl", resp, body)
		for _, c := range []struct {
			what   string
			header http.Header
			body   string
			status int
			code   string
		}{
			{"x-amz-acl: private", http.Header{"X-Amz-Acl": {"private"}}, "", 200, ""},
			{"the owner's FULL_CONTROL", nil, policyFullControl, 200, ""},
			{"x-amz-acl: public-read", http.Header{"X-Amz-Acl": {"public-read"}}, "", 501, "NotImplemented"},
			{"x-amz-grant-read", http.Header{"X-Amz-Grant-Read": {`uri="http://acs.amazonaws.com/groups/global/AllUsers"`}}, "", 501, "NotImplemented"},
			{"a READ grant", nil, policyRead, 501, "NotImplemented"},
			{"nothing", nil, "", 400, "MissingSecurityHeader"},
		} {
			rr := rawRequest{method: http.MethodPut, path: path, query: "acl", header: c.header}
			if c.body != "" {
				rr.body = []byte(c.body)
			}
			resp, body := e.do(t, rr)
			if resp.StatusCode != c.status || errorCode(t, body) != c.code {
				t.Errorf("PUT %s?acl with %s: %d %q, want %d %s", path, c.what, resp.StatusCode, body, c.status, c.code)
			}
		}
	}
	// What does not exist has no ACL.
	resp, body := e.do(t, rawRequest{method: http.MethodGet, path: obj + "-missing", query: "acl"})
	expectError(t, resp, body, 404, "NoSuchKey")
	resp, body = e.do(t, rawRequest{method: http.MethodPut, path: obj + "-missing", query: "acl", header: http.Header{"X-Amz-Acl": {"private"}}})
	expectError(t, resp, body, 404, "NoSuchKey")
	resp, body = e.do(t, rawRequest{method: http.MethodGet, path: "/" + uniqueBucket("nobucket"), query: "acl"})
	expectError(t, resp, body, 404, "NoSuchBucket")
	// A create and a put with the canned private ACL are taken.
	if err := e.client.MakeBucket(t.Context(), uniqueBucket("aclmade"), minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	resp, body = e.do(t, rawRequest{method: http.MethodPut, path: "/" + uniqueBucket("aclcreate"), header: http.Header{"X-Amz-Acl": {"private"}}})
	if resp.StatusCode != 200 {
		t.Errorf("create bucket with x-amz-acl: private: %d %q", resp.StatusCode, body)
	}
	resp, body = e.do(t, rawRequest{method: http.MethodPut, path: obj + "2", body: []byte("v2"), header: http.Header{"X-Amz-Acl": {"private"}}})
	if resp.StatusCode != 200 {
		t.Errorf("put with x-amz-acl: private: %d %q", resp.StatusCode, body)
	}
	// A 501 is the client's matter: logged at warn, never error.
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, `"status":501`) && !strings.Contains(line, `"level":"warn"`) {
			t.Errorf("a 501 logged above warn: %s", line)
		}
	}
	if !strings.Contains(logs.String(), `"status":501`) {
		t.Error("no 501 was logged")
	}
}

// TestACLAuthorization: reading an ACL takes the right to read what it is
// the ACL of, setting one the right to write it.
func TestACLAuthorization(t *testing.T) {
	reg := accessForTest()
	e := newEnv(t, backends[0], func(o *nodeOptions) { o.Access = reg })
	bucket, other := e.makeBucket(t, "aclauth"), e.makeBucket(t, "aclother")
	e.put(t, bucket, "k", []byte("v"), minio.PutObjectOptions{})
	e.put(t, other, "k", []byte("v"), minio.PutObjectOptions{})
	grants := []access.Grant{{Bucket: bucket, Actions: access.Read | access.List}}
	if err := reg.SetUsers([]access.User{{AccessKey: trainerKey, Secret: trainerSecret, Grants: grants}}); err != nil {
		t.Fatal(err)
	}
	as := func(method, path string) (*http.Response, []byte) {
		rr := rawRequest{method: method, path: path, query: "acl", access: trainerKey, secret: trainerSecret}
		if method == http.MethodPut {
			rr.header = http.Header{"X-Amz-Acl": {"private"}}
		}
		return e.do(t, rr)
	}
	for _, path := range []string{"/" + bucket + "/k", "/" + bucket} {
		resp, body := as(http.MethodGet, path)
		wantPrivateACL(t, "a reader's GET "+path+"?acl", resp, body)
		resp, body = as(http.MethodPut, path)
		expectError(t, resp, body, 403, "AccessDenied")
	}
	for _, path := range []string{"/" + other + "/k", "/" + other} {
		resp, body := as(http.MethodGet, path)
		expectError(t, resp, body, 403, "AccessDenied")
	}
}

// specialKeysScript is s3-tests' test_bucket_create_special_key_names
// with boto3: keys of special characters are put, listed, read, and set
// the canned private ACL; it also reads each one's ACL and the bucket's.
const specialKeysScript = `
import sys, boto3
from botocore.config import Config
endpoint, key, secret, bucket = sys.argv[1:5]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
    aws_access_key_id=key, aws_secret_access_key=secret,
    config=Config(retries={"max_attempts": 1, "mode": "standard"}, s3={"addressing_style": "path"}))
names = [' ', '"', '$', '%', '&', "'", '<', '>', '_', '_ ', '_ _', '__']
s3.create_bucket(Bucket=bucket)
for n in names:
    s3.put_object(Bucket=bucket, Key=n, Body=n)
listed = [o["Key"] for o in s3.list_objects(Bucket=bucket)["Contents"]]
assert listed == names, listed
for n in names:
    body = s3.get_object(Bucket=bucket, Key=n)["Body"].read().decode()
    assert body == n, (n, body)
    s3.put_object_acl(Bucket=bucket, Key=n, ACL="private")
    grants = s3.get_object_acl(Bucket=bucket, Key=n)["Grants"]
    assert [g["Permission"] for g in grants] == ["FULL_CONTROL"], grants
grants = s3.get_bucket_acl(Bucket=bucket)["Grants"]
assert len(grants) == 1 and grants[0]["Permission"] == "FULL_CONTROL" and grants[0]["Grantee"]["Type"] == "CanonicalUser", grants
s3.put_bucket_acl(Bucket=bucket, ACL="private")
print("ok")
`

func TestACLSpecialKeyNamesBoto3(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 not found (make deps installs it)")
	}
	e := newEnv(t, backends[0])
	out, err := exec.Command(py, "-c", specialKeysScript, "http://"+e.addr, testAccess, testSecret, uniqueBucket("special")).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("boto3: %v\n%s", err, out)
	}
}

// TestPreflight: an OPTIONS on a presigned GET URL is a CORS preflight,
// answered unauthenticated as S3 answers it for a bucket without CORS
// (s3-tests' test_cors_presigned_get_object wants 400 without Origin).
func TestPreflight(t *testing.T) {
	e := newEnv(t, backends[0])
	bucket := e.makeBucket(t, "cors")
	e.put(t, bucket, "foo", []byte("v"), minio.PutObjectOptions{})
	c, err := minio.New(e.addr, &minio.Options{Creds: credentials.NewStaticV4(testAccess, testSecret, ""), Region: testRegion})
	if err != nil {
		t.Fatal(err)
	}
	u, err := c.PresignedGetObject(t.Context(), bucket, "foo", 3600e9, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what   string
		header http.Header
		status int
		code   string
	}{
		{"no Origin", nil, 400, "BadRequest"},
		{"no Access-Control-Request-Method", http.Header{"Origin": {"example"}}, 400, "BadRequest"},
		{"a preflight", http.Header{"Origin": {"example"}, "Access-Control-Request-Method": {"GET"}}, 403, "AccessForbidden"},
	} {
		req, err := http.NewRequest(http.MethodOptions, u.String(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range tc.header {
			req.Header[k] = v
		}
		resp, body := roundTrip(t, req)
		expectError(t, resp, body, tc.status, tc.code)
	}
}
