// A node in front of an HDFS origin (the test namenode and datanode, as
// their own process, through the real colinmarc/hdfs client): writes and
// reads over S3, a file written straight into HDFS served as an object,
// and boto3 listing and reading the bucket.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	hdfsclient "github.com/colinmarc/hdfs/v2"
	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/internal/hdfstest"
)

func TestServeHDFSOrigin(t *testing.T) {
	h := hdfstest.Start(t, hdfstest.Options{})
	env := map[string]string{
		"GRANARY_ACCESS_KEY": "hdfs-access", "GRANARY_SECRET_KEY": "hdfs-secret",
		"GRANARY_DATA_DIR": t.TempDir(), "GRANARY_LOG_LEVEL": "warn",
	}
	node := startChild(t, env, "--origin", "hdfs://"+h.NameNode+"/granary", "--hdfs-user", "hdfs",
		"--ram", "64MiB", "--disk", "64MiB", "--chunk-size", "1MiB")
	cl := nodeClient(t, env, node.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.MakeBucket(ctx, "train", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	objs := map[string][]byte{}
	for i, n := range []int{0, 1, 100 << 10, 3<<20 + 17} {
		k := fmt.Sprintf("shard-%d/part.bin", i)
		objs[k] = bytes.Repeat([]byte{byte(i + 1)}, n)
		if _, err := cl.PutObject(ctx, "train", k, bytes.NewReader(objs[k]), int64(n), minio.PutObjectOptions{}); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
	}
	// A file written straight into HDFS is an object of the bucket.
	hc, err := hdfsclient.NewClient(hdfsclient.ClientOptions{Addresses: []string{h.NameNode}, User: "hdfs"})
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	objs["direct/from-hdfs.txt"] = []byte("written by a Hadoop job")
	if err := hc.MkdirAll("/granary/train/direct", 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := hc.Create("/granary/train/direct/from-hdfs.txt")
	if err == nil {
		_, err = w.Write(objs["direct/from-hdfs.txt"])
	}
	for try := 0; err == nil || errors.Is(err, hdfsclient.ErrReplicating) && try < 50; try++ {
		if err = w.Close(); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond) // the datanode is finalizing the block
	}
	if err != nil {
		t.Fatalf("write into HDFS: %v", err)
	}
	for k, want := range objs {
		if got := getAll(t, cl, "train", k); !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes, want %d", k, len(got), len(want))
		}
	}
	n := 0
	for o := range cl.ListObjectsIter(ctx, "train", minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		if _, ok := objs[o.Key]; !ok || o.Size != int64(len(objs[o.Key])) {
			t.Fatalf("listed %s (%d bytes), not an object written", o.Key, o.Size)
		}
		n++
	}
	if n != len(objs) {
		t.Fatalf("listed %d objects, want %d", n, len(objs))
	}
	botoReads(t, "http://"+node.addr, env, objs)
}

// botoReads lists the bucket and reads every object with boto3 (the
// image's python3), comparing sizes and bytes.
func botoReads(t *testing.T, endpoint string, env map[string]string, objs map[string][]byte) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 not found (make deps installs it)")
	}
	const script = `
import hashlib, sys, boto3
s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1",
                  aws_access_key_id=sys.argv[2], aws_secret_access_key=sys.argv[3])
for page in s3.get_paginator("list_objects_v2").paginate(Bucket="train", PaginationConfig={"PageSize": 2}):
    for o in page.get("Contents", []):
        body = s3.get_object(Bucket="train", Key=o["Key"])["Body"].read()
        assert len(body) == o["Size"], o["Key"]
        print(o["Key"], hashlib.sha256(body).hexdigest())
`
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-c", script, endpoint, env["GRANARY_ACCESS_KEY"], env["GRANARY_SECRET_KEY"])
	cmd.Env = append(os.Environ(), "AWS_EC2_METADATA_DISABLED=true")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("boto3: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(objs) {
		t.Fatalf("boto3 read %d objects, want %d:\n%s", len(lines), len(objs), out)
	}
	for _, l := range lines {
		k, sum, _ := strings.Cut(l, " ")
		if want := fmt.Sprintf("%x", sha256.Sum256(objs[k])); sum != want {
			t.Fatalf("boto3 %s: sha256 %s, want %s", k, sum, want)
		}
	}
}
