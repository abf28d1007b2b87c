// Users and policies on a running node: `granary user` changes the users
// file and the node follows within its poll; users declared in the
// configuration file; anonymous grants; members that disagree are named.
package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/ops"
)

// runCmd runs a granary command line in-process and returns its output,
// failing the test unless it exits with want.
func runCmd(t *testing.T, want int, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if code := execute(context.Background(), args, &out, &out, envMap(nil)); code != want {
		t.Fatalf("granary %s: exit %d, want %d\n%s", strings.Join(args, " "), code, want, out.String())
	}
	return out.String()
}

// eventually polls check until it returns nil, for at most a minute (a
// node reads its users file every usersPoll).
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %v after a minute", what, err)
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not a wait for an event
	}
}

// clientAs is a minio-go client of addr signing as key.
func clientAs(t *testing.T, addr, key, secret string) *minio.Client {
	t.Helper()
	cl, err := newS3Client("http://"+addr, envMap(map[string]string{"GRANARY_ACCESS_KEY": key, "GRANARY_SECRET_KEY": secret}))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func errCode(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(minio.ToErrorResponse(err).Code)
}

func TestUserCommandsOnARunningNode(t *testing.T) {
	mio := miniotest.StartT(t)
	dir := t.TempDir()
	env := map[string]string{
		"GRANARY_ACCESS_KEY": "node-admin", "GRANARY_SECRET_KEY": "node-admin-secret",
		"GRANARY_ORIGIN_ACCESS_KEY": mio.AccessKey, "GRANARY_ORIGIN_SECRET_KEY": mio.SecretKey,
		"GRANARY_DATA_DIR": dir,
	}
	s := startServe(t, env, "--origin", "s3://"+mio.Endpoint+"?secure=false", "--ram", "64MiB", "--disk", "128MiB")
	ctx := context.Background()
	admin := clientAs(t, s.addr, "node-admin", "node-admin-secret")
	if err := admin.MakeBucket(ctx, "shared", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	sample := []byte("sample bytes")
	if _, err := admin.PutObject(ctx, "shared", "pub/a", bytes.NewReader(sample), int64(len(sample)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}

	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte("trainer-secret-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runCmd(t, exitOK, "user", "add", "trainer", "--data-dir", dir, "--secret-file", secretFile, "--allow", "read,list:shared/pub/")
	trainer := clientAs(t, s.addr, "trainer", "trainer-secret-value")
	eventually(t, "the new user reads", func() error {
		_, err := trainer.StatObject(ctx, "shared", "pub/a", minio.StatObjectOptions{})
		return err
	})
	put := func() error {
		_, err := trainer.PutObject(ctx, "shared", "pub/b", bytes.NewReader(sample), int64(len(sample)), minio.PutObjectOptions{})
		return errCode(err)
	}
	if err := put(); err == nil || err.Error() != "AccessDenied" {
		t.Fatalf("a reader's PUT: %v, want AccessDenied", err)
	}
	if _, err := clientAs(t, mio.Endpoint, mio.AccessKey, mio.SecretKey).StatObject(ctx, "shared", "pub/b", minio.StatObjectOptions{}); err == nil {
		t.Fatal("a refused PUT reached the origin")
	}
	runCmd(t, exitOK, "user", "policy", "trainer", "--data-dir", dir, "--allow", "read,list,write:shared/pub/")
	eventually(t, "the widened policy applies", put)

	// A users file that does not load leaves the last good users.
	users := filepath.Join(dir, "users.json")
	if err := os.WriteFile(users+".new", []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(users+".new", users); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the bad file is reported", func() error {
		if !strings.Contains(s.stderr.String(), "users file not loaded") {
			return errors.New("no log line")
		}
		return nil
	})
	if err := put(); err != nil {
		t.Fatalf("after a bad users file: %v", err)
	}
	if err := os.Remove(users); err != nil {
		t.Fatal(err)
	}
	runCmd(t, exitOK, "user", "add", "other", "--data-dir", dir, "--allow", "read:shared")
	eventually(t, "the removed user is refused", func() error {
		if _, err := trainer.ListBuckets(ctx); minio.ToErrorResponse(err).Code != "InvalidAccessKeyId" {
			return errors.New("still accepted")
		}
		return nil
	})
	out := runCmd(t, exitOK, "user", "list", "--data-dir", dir)
	if !strings.Contains(out, "other") || strings.Contains(out, "trainer") {
		t.Fatalf("user list:\n%s", out)
	}
	runCmd(t, exitUsage, "user", "remove", "trainer", "--data-dir", dir)
	runCmd(t, exitUsage, "user", "add", "x", "--data-dir", dir)
	runCmd(t, exitUsage, "user", "add", "someone", "--data-dir", dir, "--allow", "fly:shared")
}

func TestDeclaredUsersAndAnonymousGrants(t *testing.T) {
	mio := miniotest.StartT(t)
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "reader-secret")
	if err := os.WriteFile(secretFile, []byte("reader-secret-value"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "granary.yaml")
	yaml := "users:\n  - {name: reader, secret-file: " + secretFile + ", allow: ['read:data']}\n" +
		"  - {name: writer, secret-env: WRITER_SECRET, allow: ['write:data/in/']}\n" +
		"anonymous: ['read,list:data/public/']\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"GRANARY_ACCESS_KEY": "node-admin", "GRANARY_SECRET_KEY": "node-admin-secret",
		"GRANARY_ORIGIN_ACCESS_KEY": mio.AccessKey, "GRANARY_ORIGIN_SECRET_KEY": mio.SecretKey,
		"GRANARY_DATA_DIR": filepath.Join(dir, "data"), "WRITER_SECRET": "writer-secret-value",
	}
	s := startServe(t, env, "--config", cfg, "--origin", "s3://"+mio.Endpoint+"?secure=false", "--ram", "64MiB", "--disk", "128MiB")
	ctx := context.Background()
	admin := clientAs(t, s.addr, "node-admin", "node-admin-secret")
	if err := admin.MakeBucket(ctx, "data", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	writer := clientAs(t, s.addr, "writer", "writer-secret-value")
	for _, key := range []string{"in/x", "public/x"} {
		_, err := writer.PutObject(ctx, "data", key, strings.NewReader("x"), 1, minio.PutObjectOptions{})
		if want := key == "in/x"; (err == nil) != want {
			t.Fatalf("writer PUT %s: %v", key, err)
		}
	}
	if _, err := admin.PutObject(ctx, "data", "public/x", strings.NewReader("open"), 4, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	reader := clientAs(t, s.addr, "reader", "reader-secret-value")
	if _, err := reader.StatObject(ctx, "data", "in/x", minio.StatObjectOptions{}); err != nil {
		t.Fatalf("reader: %v", err)
	}
	for path, want := range map[string]int{
		"/data/public/x": 200, "/data?list-type=2&prefix=public/": 200,
		"/data/in/x": 403, "/data?list-type=2": 403, "/": 403,
	} {
		resp, err := http.Get("http://" + s.addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("anonymous GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}

	// Anonymous writes and secrets in the file are refused at start.
	for _, bad := range []string{"anonymous: ['write:data']\n", "users:\n  - {name: u1, secret: inline-secret}\n"} {
		if err := os.WriteFile(cfg, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		code := execute(ctx, []string{"serve", "--config", cfg, "--data-dir", t.TempDir()}, &out, &out, envMap(nil))
		if code != exitUsage {
			t.Errorf("config %q: exit %d, want %d\n%s", bad, code, exitUsage, out.String())
		}
	}
}

func TestStatusWarnsWhenMembersDisagree(t *testing.T) {
	reports := []*ops.Status{{Access: "aaaa"}, {Access: "aaaa"}, nil}
	var out bytes.Buffer
	printAccessSplit(&out, reports)
	if out.Len() != 0 {
		t.Fatalf("members that agree: %q", out.String())
	}
	reports[2] = &ops.Status{Access: "bbbb"}
	printAccessSplit(&out, reports)
	if !strings.Contains(out.String(), "WARNING: members hold 2 different sets of users") {
		t.Fatalf("members that disagree: %q", out.String())
	}
}

// Members given the same users file accept the same users, and their
// status shows one set of users.
func TestClusterSharesUsers(t *testing.T) {
	mio := miniotest.StartT(t)
	shared := t.TempDir()
	files := []string{"--users-file", filepath.Join(shared, "users.json"), "--users-key-file", filepath.Join(shared, "users.key")}
	secretFile := filepath.Join(shared, "secret")
	if err := os.WriteFile(secretFile, []byte("member-user-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	runCmd(t, exitOK, append([]string{"user", "add", "reader", "--secret-file", secretFile, "--allow", "read:set"}, files...)...)
	r := startClusterWith(t, mio, "s3://"+mio.Endpoint+"?secure=false", 2, nil, files...)
	waitMembersAt(t, "http://"+r.addrs[1], r.env, 2)
	ctx := context.Background()
	direct := directClient(t, mio)
	if err := direct.MakeBucket(ctx, "set", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := direct.PutObject(ctx, "set", "o", strings.NewReader("shared"), 6, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, addr := range r.addrs {
		if _, err := clientAs(t, addr, "reader", "member-user-secret").StatObject(ctx, "set", "o", minio.StatObjectOptions{}); err != nil {
			t.Fatalf("the shared user on %s: %v", addr, err)
		}
	}
	var out bytes.Buffer
	env := envMap(r.env)
	if code := execute(ctx, []string{"status", "--endpoint", "http://" + r.addrs[0]}, &out, &out, env); code != exitOK {
		t.Fatalf("status: %d\n%s", code, out.String())
	}
	if strings.Contains(out.String(), "WARNING") || !strings.Contains(out.String(), "2 members") {
		t.Fatalf("status of members that agree:\n%s", out.String())
	}
	warmupsSeenByScopedAdmin(t, r, files)
}

// warmupsSeenByScopedAdmin: a warm-up of bucket other on the second
// member is in the cluster status the node's key reads through the first,
// and not in the one an admin of bucket set alone reads: each member's
// report is filtered by the caller's policy, as the node's own is.
func warmupsSeenByScopedAdmin(t *testing.T, r *clusterRig, files []string) {
	t.Helper()
	ctx := context.Background()
	secretFile := filepath.Join(filepath.Dir(files[1]), "secret")
	runCmd(t, exitOK, append([]string{"user", "add", "setadmin", "--secret-file", secretFile, "--allow", "admin:set"}, files...)...)
	direct := directClient(t, r.mio)
	if err := direct.MakeBucket(ctx, "other", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := direct.PutObject(ctx, "other", "x", strings.NewReader("other"), 5, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if code := execute(ctx, []string{"warm", "--endpoint", "http://" + r.addrs[1], "s3://other/"}, io.Discard, io.Discard, envMap(r.env)); code != exitOK {
		t.Fatalf("warm other: exit %d", code)
	}
	statusAs := func(access, secret string) string {
		t.Helper()
		env := maps.Clone(r.env)
		env["GRANARY_ACCESS_KEY"], env["GRANARY_SECRET_KEY"] = access, secret
		var out, errs bytes.Buffer
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
			out.Reset()
			code := execute(ctx, []string{"status", "--json", "--endpoint", "http://" + r.addrs[0], "s3://set/"}, &out, &errs, envMap(env))
			if code == exitOK && strings.Count(out.String(), `"healthy":true`) == 2 {
				return out.String()
			}
			if time.Now().After(deadline) {
				t.Fatalf("status as %s: exit %d\n%s%s", access, code, out.String(), errs.String())
			}
		}
	}
	const otherJob = `"bucket":"other"`
	if all := statusAs(r.env["GRANARY_ACCESS_KEY"], r.env["GRANARY_SECRET_KEY"]); !strings.Contains(all, otherJob) {
		t.Fatalf("the node's key does not see the warm-up of other:\n%s", all)
	}
	if scoped := statusAs("setadmin", "member-user-secret"); strings.Contains(scoped, otherJob) {
		t.Fatalf("an admin of set alone sees the warm-up of other:\n%s", scoped)
	}
}
