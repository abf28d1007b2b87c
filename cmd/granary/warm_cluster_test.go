// Warm-ups across a cluster: a warm-up running on one member is cancelled
// through another member's admin API (member=ID), by a key that
// administers its bucket, and from that member's console; a key that
// does not is refused and the job runs on.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/internal/slowproxy"
	"github.com/granary-dev/granary/ops"
)

func TestCancelWarmOnAnotherMember(t *testing.T) {
	mio := miniotest.StartT(t)
	// An origin slow enough that the warm-up below runs for a minute.
	proxy, err := slowproxy.Start(mio.Endpoint, slowproxy.Options{Stream: 256 << 10, Total: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	ctx := context.Background()
	direct := directClient(t, mio)
	if err := direct.MakeBucket(ctx, "slow", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 16 {
		obj := randomBytes(uint64(i), 1<<20)
		if _, err := direct.PutObject(ctx, "slow", fmt.Sprintf("set/%02d", i), bytes.NewReader(obj), int64(len(obj)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A reader of the bucket, on every member: it may not administer it.
	shared := t.TempDir()
	files := []string{"--users-file", filepath.Join(shared, "users.json"), "--users-key-file", filepath.Join(shared, "users.key")}
	secretFile := filepath.Join(shared, "secret")
	if err := os.WriteFile(secretFile, []byte("slow-reader-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	runCmd(t, exitOK, append([]string{"user", "add", "reader", "--secret-file", secretFile, "--allow", "read,list:slow"}, files...)...)
	rig := startClusterWith(t, mio, "s3://"+proxy.Addr()+"?secure=false", 2, nil, files...)
	waitMembersAt(t, "http://"+rig.addrs[0], rig.env, 2)
	reader := map[string]string{"GRANARY_ACCESS_KEY": "reader", "GRANARY_SECRET_KEY": "slow-reader-secret"}

	st, err := warmCall(rig.env, rig.addrs[1], "POST", url.Values{"bucket": {"slow"}, "prefix": {"set/"}})
	if err != nil || st.State != ops.WarmRunning {
		t.Fatalf("starting the warm-up on n2: %+v, %v", st, err)
	}
	id := st.ID
	onN2 := func(id string) ops.WarmStatus {
		t.Helper()
		st, err := warmCall(rig.env, rig.addrs[1], "GET", url.Values{"id": {id}})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	cancelVia1 := func(env map[string]string, member string) (ops.WarmStatus, error) {
		return warmCall(env, rig.addrs[0], "DELETE", url.Values{"id": {id}, "member": {member}})
	}

	// A key that may not administer the bucket is refused; the job runs on.
	if _, err := cancelVia1(reader, "n2"); err == nil || !strings.Contains(err.Error(), "AccessDenied") {
		t.Fatalf("the reader cancelling: %v, want AccessDenied", err)
	}
	if st := onN2(id); st.State != ops.WarmRunning {
		t.Fatalf("after a refused cancel the job is %s", st.State)
	}
	// Neither a member nor a job that does not exist is cancelled.
	if _, err := cancelVia1(rig.env, "n9"); err == nil || !strings.Contains(err.Error(), "InvalidArgument") {
		t.Fatalf("an unknown member: %v, want InvalidArgument", err)
	}
	if _, err := warmCall(rig.env, rig.addrs[0], "DELETE", url.Values{"id": {"w999"}, "member": {"n2"}}); err == nil || !strings.Contains(err.Error(), "NoSuchKey") {
		t.Fatalf("a job n2 does not have: %v, want NoSuchKey", err)
	}

	// The bucket's admin cancels it through n1.
	if st, err := cancelVia1(rig.env, "n2"); err != nil || st.ID != id {
		t.Fatalf("cancelling through n1: %+v, %v", st, err)
	}
	waitFor(t, time.Minute, "the job cancelled on n2", func() bool { return onN2(id).State == ops.WarmCancelled })

	// n1's console cancels another job of n2 with the job's button.
	if st, err = warmCall(rig.env, rig.addrs[1], "POST", url.Values{"bucket": {"slow"}, "prefix": {"set/"}}); err != nil {
		t.Fatal(err)
	}
	id2 := st.ID
	r := newConsoleRig(t, "http://"+rig.addrs[0], rig.env)
	tab := r.tab()
	r.signIn(tab, rig.env["GRANARY_ACCESS_KEY"], rig.env["GRANARY_SECRET_KEY"], "")
	row := fmt.Sprintf(`#warmups tbody tr[data-job=%q][data-member="n2"]`, id2)
	r.do(tab, "n2's running job shows a Cancel button", waitJS(`document.querySelector('`+row+` button[data-cancel]') !== null`))
	r.shot(tab, "warm-up-on-another-member")
	// Clicked in one turn of the page's script: a refresh replaces the rows.
	if !eval[bool](r, tab, `(() => { const b = document.querySelector('`+row+` button[data-cancel]'); b && b.click(); return !!b; })()`) {
		t.Fatal("the Cancel button went away")
	}
	waitFor(t, time.Minute, "the second job cancelled on n2", func() bool { return onN2(id2).State == ops.WarmCancelled })
	r.do(tab, "the page shows it cancelled", waitJS(`document.querySelector('`+row+`').dataset.state === 'cancelled'`))
}

// warmCall makes a warm-up call (the admin route) on the node at addr
// with env's key, and decodes the job's status it answers.
func warmCall(env map[string]string, addr, method string, q url.Values) (ops.WarmStatus, error) {
	var st ops.WarmStatus
	node, err := (&clientFlags{endpoint: "http://" + addr}).Remote(envMap(env))
	if err != nil {
		return st, err
	}
	resp, err := adminCall(context.Background(), envMap(env), node, method, "/_granary/warm", q)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil {
		err = json.Unmarshal(body, &st)
	}
	return st, err
}
