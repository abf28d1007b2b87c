// Tests of -endpoint: its checks and credentials, and the reads scenario
// against a real MinIO as the only target, every body verified.
package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/internal/miniotest"
)

// envOf is a lookup over vars.
func envOf(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func TestEndpointCredentials(t *testing.T) {
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		env            map[string]string
		access, secret string // "" when an error is wanted
	}{
		{"aws", map[string]string{"AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "S", "GRANARY_ACCESS_KEY": "G"}, "A", "S"},
		{"granary", map[string]string{"GRANARY_ACCESS_KEY": "G", "GRANARY_SECRET_KEY": "GS"}, "G", "GS"},
		{"granary file", map[string]string{"GRANARY_ACCESS_KEY": "G", "GRANARY_SECRET_KEY_FILE": file}, "G", "from-file"},
		{"half aws", map[string]string{"AWS_ACCESS_KEY_ID": "A", "GRANARY_ACCESS_KEY": "G", "GRANARY_SECRET_KEY": "GS"}, "", ""},
		{"none", map[string]string{}, "", ""},
		{"missing file", map[string]string{"GRANARY_ACCESS_KEY": "G", "GRANARY_SECRET_KEY_FILE": file + ".no"}, "", ""},
	} {
		a, s, err := endpointCredentials(envOf(tc.env))
		if tc.access == "" {
			if err == nil {
				t.Errorf("%s: got %q %q, want an error", tc.name, a, s)
			}
			continue
		}
		if err != nil || a != tc.access || s != tc.secret {
			t.Errorf("%s: got %q %q %v, want %q %q", tc.name, a, s, err, tc.access, tc.secret)
		}
	}
}

func TestEndpointCheck(t *testing.T) {
	env := envOf(map[string]string{"AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "S", "AWS_REGION": "eu-west-3"})
	e := endpointOptions{url: "http://127.0.0.1:9000/", bucket: "b"}
	if err := e.check(env, ""); err != nil || e.url != "http://127.0.0.1:9000" || e.access != "A" || e.region != "eu-west-3" {
		t.Fatalf("good endpoint: %+v, %v", e, err)
	}
	for _, tc := range []struct {
		e       endpointOptions
		granary string
		want    string
	}{
		{endpointOptions{url: "http://h:1", bucket: "b"}, "bin/granary", "drop -granary"},
		{endpointOptions{url: "h:1", bucket: "b"}, "", "want http://host:port"},
		{endpointOptions{url: "http://h:1/bucket", bucket: "b"}, "", "want http://host:port"},
		{endpointOptions{url: "http://h:1"}, "", "needs -bucket"},
	} {
		if err := tc.e.check(env, tc.granary); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.e, err, tc.want)
		}
	}
	var none endpointOptions
	if err := none.check(envOf(nil), ""); err != nil {
		t.Errorf("no endpoint: %v", err)
	}
}

// tinyPlan is a reads plan small enough for a unit test.
func tinyPlan() plan {
	return plan{count: 20, sizes: []int{4 << 10}, concs: []int{4}, largeSize: 1 << 20, ranges: 2}
}

// TestEndpointReads runs the reads scenario against a real MinIO given
// as -endpoint: the report's only target is the endpoint, every read
// counted was verified, a second run reads the data set in place
// (-reuse), and a changed object fails the run.
func TestEndpointReads(t *testing.T) {
	if testing.Short() {
		t.Skip("starts MinIO")
	}
	mio := miniotest.StartT(t)
	e := endpointOptions{url: mio.URL(), bucket: "measured", prefix: "lt/"}
	env := envOf(map[string]string{"GRANARY_ACCESS_KEY": mio.AccessKey, "GRANARY_SECRET_KEY": mio.SecretKey})
	if err := e.check(env, ""); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var log bytes.Buffer
	rep, err := runPlan(ctx, options{endpoint: e}, tinyPlan(), &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	checkEndpointReport(t, rep, mio.URL())
	e.reuse = true
	if rep, err = runPlan(ctx, options{endpoint: e}, tinyPlan(), &log); err != nil {
		t.Fatalf("-reuse: %v\n%s", err, log.String())
	}
	checkEndpointReport(t, rep, mio.URL())
	cl, err := e.s3Client()
	if err != nil {
		t.Fatal(err)
	}
	changed := bytes.Repeat([]byte{'x'}, 4<<10)
	if _, err := cl.PutObject(ctx, "measured", "lt/small/4KiB-c4/000007", bytes.NewReader(changed), int64(len(changed)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := runPlan(ctx, options{endpoint: e}, tinyPlan(), &log); err == nil || !strings.Contains(err.Error(), "wrong bytes") {
		t.Fatalf("a changed object: %v", err)
	}
}

// checkEndpointReport checks that rep measured url alone, with every
// GET of the tiny plan counted.
func checkEndpointReport(t *testing.T, rep *report, url string) {
	t.Helper()
	if len(rep.targets) != 1 || rep.targets[0].name != url {
		t.Fatalf("targets %+v, want %s alone", rep.targets, url)
	}
	p := tinyPlan()
	if len(rep.small) != 1 || rep.small[0].target != url || rep.small[0].n != p.count || rep.small[0].opsPerSec() <= 0 {
		t.Errorf("small results %+v", rep.small)
	}
	if len(rep.large) != 2 {
		t.Fatalf("%d large results, want 2", len(rep.large))
	}
	for _, l := range rep.large {
		if l.target != url || l.bytes != p.largeSize {
			t.Errorf("large result %+v", l)
		}
	}
	md := rep.markdown()
	for _, want := range []string{"Passes, in the order measured: " + url + ".", "| 4KiB | 4 | " + url + " |",
		"| 2 ranges | " + url + " |", "| 4KiB | 4 | " + url + " | not measured | - | not measured |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	for _, not := range []string{"| minio", "| nginx", "| granary", "| trivial", "warm /"} {
		if strings.Contains(md, not) {
			t.Errorf("report has %q:\n%s", not, md)
		}
	}
}
