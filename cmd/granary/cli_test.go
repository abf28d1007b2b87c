// The command line as a new user meets it: usage errors exit 2 in every
// command, --version, a version stamped by `make build`, serve --help's
// defaults and per-bucket keys, human units (raw with --json), the AWS_*
// names, a pin of a missing bucket, a warm-up of an empty prefix.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/granary-dev/granary/ops"
)

// run executes args with env and returns the exit code, stdout, stderr.
func run(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	code := execute(ctx, args, &out, &errb, envMap(env))
	return code, out.String(), errb.String()
}

// TestUsageErrorsExit2 gives every command that takes positional
// arguments too many of them, and warm none: each is a usage error.
func TestUsageErrorsExit2(t *testing.T) {
	var walk func(path []string, c *cobra.Command)
	n := 0
	walk = func(path []string, c *cobra.Command) {
		if c.Args != nil && c.Runnable() {
			n++
			args := append(append([]string{}, path...), "a", "b", "c", "d", "e")
			if code, _, errb := run(t, nil, args...); code != exitUsage {
				t.Errorf("%v: exit %d, want %d\n%s", args, code, exitUsage, errb)
			}
		}
		for _, sub := range c.Commands() {
			walk(append(append([]string{}, path...), sub.Name()), sub)
		}
	}
	walk(nil, newRootCmd(envMap(nil)))
	if n < 10 {
		t.Fatalf("only %d commands checked", n)
	}
	if code, _, errb := run(t, nil, "warm"); code != exitUsage {
		t.Errorf("warm with no argument: exit %d\n%s", code, errb)
	}
}

func TestVersionFlag(t *testing.T) {
	code, out, _ := run(t, nil, "--version")
	if code != exitOK || strings.TrimSpace(out) != versionLine() {
		t.Fatalf("--version: exit %d, %q, want %q", code, out, versionLine())
	}
}

// TestMakeBuildStampsVersion builds with `make build` and asks the binary
// its version: the checkout's git description.
func TestMakeBuildStampsVersion(t *testing.T) {
	want, err := exec.Command("git", "describe", "--tags", "--always", "--dirty").Output()
	if err != nil {
		t.Fatalf("git describe: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "granary")
	if out, err := exec.Command("make", "-C", "../..", "build", "BIN="+bin).CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), "granary "+strings.TrimSpace(string(want))+" (") {
		t.Fatalf("--version of make build's binary: %q, want version %q", out, want)
	}
}

// TestServeHelpDefaultsAndBucketKeys: --dirty-limit shows the limit it
// takes, the origin names hdfs://, and every per-bucket YAML key is named.
func TestServeHelpDefaultsAndBucketKeys(t *testing.T) {
	_, out, _ := run(t, nil, "serve", "--help")
	if !regexp.MustCompile(`--dirty-limit .*\(default "` + Size(Defaults().DirtyBytes()).String() + `"\)`).MatchString(out) {
		t.Error("serve --help does not show --dirty-limit's default")
	}
	if !strings.Contains(out, "hdfs://") {
		t.Error("serve --help does not name hdfs://")
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[BucketConfig](), reflect.TypeFor[WarmSchedule]()} {
		for f := range typ.Fields() {
			key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if !regexp.MustCompile(`\b` + key + `\b`).MatchString(out) {
				t.Errorf("serve --help does not name the per-bucket key %q (%s)", key, typ.Name())
			}
		}
	}
}

func TestHumanUnits(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{humanBytes(1288490189), "1.2 GiB"}, {humanBytes(512), "512 B"}, {humanBytes(-1), "0 B"},
		{humanRate(85e6), "85 MB/s"}, {humanRate(0), "0 B/s"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	line := warmLine(ops.WarmStatus{Spec: ops.WarmSpec{Bucket: "b"}, Started: time.Now().Add(-2 * time.Second),
		Queued: 2, QueuedBytes: 300 << 20, FetchedBytes: 170 << 20}, time.Now())
	if !strings.Contains(line, "170 MiB of 300 MiB") || !regexp.MustCompile(`\d+ MB/s`).MatchString(line) {
		t.Errorf("warm progress: %q", line)
	}
}

// TestHitRateLabelled: the hit rate says what it is a share of.
func TestHitRateLabelled(t *testing.T) {
	if got := hitRate(ops.BucketStatus{Hits: 3030, Misses: 2011, HitRate: 3030.0 / 5041}); got != "60.1% of 5041 chunk reads" {
		t.Errorf("hitRate = %q", got)
	}
	if got := hitRate(ops.BucketStatus{}); got != "-" {
		t.Errorf("no reads: %q, want -", got)
	}
}

// TestCLIOnANode runs the client commands against a real node over MinIO.
func TestCLIOnANode(t *testing.T) {
	node, _, env, objs := warmNode(t, 3)
	endpoint := "--endpoint=http://" + node.addr

	// warm: an empty prefix is said, and fails with --strict.
	code, _, errb := run(t, env, "warm", endpoint, "s3://dset/no-such-prefix/")
	if code != exitOK || !strings.Contains(errb, "no objects under this prefix") {
		t.Errorf("warm of an empty prefix: exit %d\n%s", code, errb)
	}
	if code, _, errb := run(t, env, "warm", endpoint, "--strict", "s3://dset/no-such-prefix/"); code != exitFailure {
		t.Errorf("warm --strict of an empty prefix: exit %d\n%s", code, errb)
	}
	// warm --json: raw numbers on stdout, human units in the summary.
	code, out, errb := run(t, env, "warm", endpoint, "--json", "s3://dset/train/")
	var st ops.WarmStatus
	if code != exitOK || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("warm --json: exit %d, %q\n%s", code, out, errb)
	}
	var want int64
	for k, v := range objs {
		if strings.HasPrefix(k, "train/") {
			want += int64(len(v))
		}
	}
	if st.FetchedBytes != want || !strings.Contains(errb, "fetched ("+humanBytes(want)+" at ") {
		t.Errorf("warm --json: fetched %d bytes, want %d; summary %q", st.FetchedBytes, want, errb)
	}

	// status: human units, raw with --json; the AWS_* names serve too.
	aws := map[string]string{"AWS_ACCESS_KEY_ID": env["GRANARY_ACCESS_KEY"], "AWS_SECRET_ACCESS_KEY": env["GRANARY_SECRET_KEY"]}
	code, out, errb = run(t, aws, "status", endpoint)
	if code != exitOK || !regexp.MustCompile(`\d+ MiB`).MatchString(out) {
		t.Errorf("status with AWS_* credentials: exit %d\n%s%s", code, out, errb)
	}
	if !strings.Contains(out, "ALREADY CACHED") { // figures say what they count
		t.Errorf("status does not say %q:\n%s", "ALREADY CACHED", out)
	}
	// Warm-ups are no client reads: the hit rate has none to count yet
	// (TestHitRateLabelled checks its label once there are some).
	if got := column(out, "BUCKET", "dset", "HIT RATE"); got != "-" {
		t.Errorf("status after warm-ups only: dset's hit rate %q, want \"-\":\n%s", got, out)
	}
	code, out, _ = run(t, env, "status", endpoint, "--json")
	if code != exitOK || !regexp.MustCompile(`"capacityBytes":\d+[,}]`).MatchString(out) {
		t.Errorf("status --json: exit %d\n%s", code, out)
	}

	// pin: a missing bucket fails; an existing one is pinned.
	if code, _, errb := run(t, env, "pin", endpoint, "s3://no-such-bucket/x/"); code != exitFailure || !strings.Contains(errb, "NoSuchBucket") {
		t.Errorf("pin of a missing bucket: exit %d\n%s", code, errb)
	}
	if code, out, errb := run(t, env, "pin", endpoint, "s3://dset/train/"); code != exitOK || !strings.Contains(out, "s3://dset/train/") {
		t.Errorf("pin: exit %d\n%s%s", code, out, errb)
	}

	// flush --json: the node's lines, raw, on stdout.
	code, out, errb = run(t, env, "flush", endpoint, "--json", "s3://dset/")
	if code != exitOK || !strings.Contains(out, `"done":true`) {
		t.Errorf("flush --json: exit %d\n%s%s", code, out, errb)
	}
}

// TestInvocation: the banner's example commands are run the way this
// process was.
func TestInvocation(t *testing.T) {
	for _, c := range []struct{ arg0, exe, want string }{
		{"/tmp/go-build123/b001/exe/granary", "/tmp/go-build123/b001/exe/granary", "go run ./cmd/granary"},
		{"bin/granary", "/src/granary/bin/granary", "bin/granary"},
		{"granary", "/usr/local/bin/granary", "granary"},
	} {
		if got := invocation(c.arg0, c.exe); got != c.want {
			t.Errorf("invocation(%s, %s) = %q, want %q", c.arg0, c.exe, got, c.want)
		}
	}
}

// TestBannerNamesClientVariables: every start's banner gives the AWS_*
// exports and says which variables granary's own client commands read.
func TestBannerNamesClientVariables(t *testing.T) {
	for _, c := range []Credentials{
		{AccessKey: "gen-key", SecretKey: "gen-secret-key", Source: "generated", Path: "/d/credentials"},
		{AccessKey: "file-key", Source: "file", Path: "/d/credentials"},
		{AccessKey: "env-key", Source: "environment", Path: "/run/secret"},
		{AccessKey: "env-key", Source: "environment"},
	} {
		var b bytes.Buffer
		printBanner(&b, "http://127.0.0.1:9000", "", Defaults(), c)
		out := b.String()
		for _, want := range []string{"export AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=",
			"granary warm, mount, status, flush and pin read", "GRANARY_ACCESS_KEY / GRANARY_SECRET_KEY"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s credentials: banner lacks %q:\n%s", c.Source, want, out)
			}
		}
	}
}

// column returns the word at name's column (tabwriter output) in the row
// starting with row, under the header line starting with header.
func column(out, header, row, name string) string {
	at := -1
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, header+" "):
			at = strings.Index(line, name)
		case at >= 0 && strings.HasPrefix(line, row+" ") && len(line) > at:
			if f := strings.Fields(line[at:]); len(f) > 0 {
				return f[0]
			}
		}
	}
	return ""
}
