// `granary bench` through its command line: usage errors exit 2, and
// gen, train (once and --find-max) and ckpt against a real MinIO, their
// --json results checked for shape (never for speed).
package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/granary-dev/granary/bench"
	"github.com/granary-dev/granary/internal/miniotest"
)

func TestBenchUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "train"},
		{"bench", "gen", "--workload", "bert", "s3://b/p/"},
		{"bench", "gen", "--sample-size", "lots", "s3://b/p/"},
		{"bench", "gen", "bucket/p/"},
		{"bench", "train", "--repeat", "0", "s3://b/p/"},
		{"bench", "train", "--au-threshold", "120", "s3://b/p/"},
		{"bench", "ckpt", "--model", "gpt5", "s3://b/p/"},
		{"bench", "train", "--by-owners", "--also-endpoint", "http://127.0.0.1:1", "s3://b/p/"},
	} {
		env := map[string]string{"GRANARY_ACCESS_KEY": "a", "GRANARY_SECRET_KEY": "b"}
		if code, _, errb := run(t, env, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d\n%s", args, code, exitUsage, errb)
		}
	}
}

func TestBenchAgainstMinIO(t *testing.T) {
	srv := miniotest.StartT(t)
	env := map[string]string{"AWS_ACCESS_KEY_ID": srv.AccessKey, "AWS_SECRET_ACCESS_KEY": srv.SecretKey}
	ep := []string{"--endpoint", srv.URL(), "--json"}
	target := "s3://bench/r50/"

	// resnet50's shape, shrunk: 6 objects of 10 samples of 2 KiB.
	code, out, errb := run(t, env, append([]string{"bench", "gen", "--workload", "resnet50", "--files", "6",
		"--samples-per-file", "10", "--sample-size", "2KiB"}, append(ep, target)...)...)
	var g genReport
	if code != 0 || json.Unmarshal([]byte(out), &g) != nil || g.Files != 6 || g.Samples != 60 || g.Bytes != 60*2048 {
		t.Fatalf("gen: exit %d, %+v\n%s%s", code, g, out, errb)
	}

	// 60 samples in batches of 5 over 2 accelerators: 6 steps each, twice.
	// Reads spread over a second endpoint of the same service (here the
	// same MinIO by another name).
	other := strings.Replace(srv.URL(), "127.0.0.1", "localhost", 1)
	code, out, errb = run(t, env, append([]string{"bench", "train", "--accelerators", "2", "--batch-size", "5",
		"--compute", "1ms", "--epochs", "2", "--repeat", "2", "--also-endpoint", other}, append(ep, target)...)...)
	var rep bench.Repeated
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Runs) != 2 || rep.AU.Values != 2 {
		t.Fatalf("train: exit %d\n%s%s", code, out, errb)
	}
	for _, r := range rep.Runs {
		if r.Workload != "resnet50" || r.Accelerators != 2 || r.Samples != 120 || r.Bytes != 120*2048 ||
			len(r.AUPerAccelerator) != 2 || len(r.EpochSeconds) != 2 || r.AU <= 0 || r.AU > 1 || r.Threshold != 0.9 {
			t.Fatalf("train run %+v", r)
		}
	}

	// Reads do go to the other endpoint: one that is not there fails them.
	code, out, errb = run(t, env, append([]string{"bench", "train", "--batch-size", "5", "--compute", "1ms",
		"--epochs", "1", "--also-endpoint", "http://127.0.0.1:1"}, append(ep, target)...)...)
	if code == 0 {
		t.Fatalf("train with an endpoint that is not there succeeded\n%s%s", out, errb)
	}

	// find-max with a threshold nothing misses stops at the most tried.
	code, out, errb = run(t, env, append([]string{"bench", "train", "--find-max", "--max-accelerators", "3",
		"--batch-size", "5", "--compute", "1ms", "--epochs", "1", "--au-threshold", "0.001"}, append(ep, target)...)...)
	var mr bench.MaxResult
	if code != 0 || json.Unmarshal([]byte(out), &mr) != nil || mr.Max != 3 || !mr.Capped || len(mr.Probes) != 3 {
		t.Fatalf("find-max: exit %d, %+v\n%s%s", code, mr, out, errb)
	}

	// A checkpoint of 3 ranks, one of them multipart (part 5 MiB).
	code, out, errb = run(t, env, append([]string{"bench", "ckpt", "--ranks", "3", "--size", "18MiB",
		"--part-size", "5MiB"}, append(ep, "s3://bench/")...)...)
	var cr bench.CkptResult
	if code != 0 || json.Unmarshal([]byte(out), &cr) != nil || cr.Ranks != 3 || cr.Bytes != 18<<20 || cr.SaveGBps <= 0 || cr.RestoreGBps <= 0 {
		t.Fatalf("ckpt: exit %d, %+v\n%s%s", code, cr, out, errb)
	}

	// Without a data set, train says how to make one.
	code, _, errb = run(t, env, append([]string{"bench", "train"}, append(ep, "s3://bench/none/")...)...)
	if code != exitFailure || !strings.Contains(errb, "granary bench gen") {
		t.Fatalf("train of nothing: exit %d\n%s", code, errb)
	}
}

func TestBenchProgressFitsTheTerminal(t *testing.T) {
	long := strings.Repeat("x", 100)
	if got := []rune(fitColumns(long, 79)); len(got) != 79 || got[78] != '…' {
		t.Fatalf("cut to %d runes: %q", len(got), string(got))
	}
	if got := fitColumns("short", 79); got != "short" {
		t.Fatalf("a short line changed: %q", got)
	}
}

// TestBenchProgressAU: the progress line's AU is the run's compute over
// its time on every accelerator.
func TestBenchProgressAU(t *testing.T) {
	var c bench.Counters
	c.Compute.Store(int64(5 * time.Second)) // an earlier run's
	start := time.Unix(1_700_000_000, 0)
	m := &runMark{start: start, accel: 2, compute0: c.Compute.Load()}
	c.Compute.Add(int64(18 * time.Second))
	if got := m.au(&c, start.Add(10*time.Second)); got != "AU 90.0%" {
		t.Errorf("18 s of compute on 2 accelerators in 10 s: %q", got)
	}
	if got := m.au(&c, start.Add(time.Second/2)); got != "AU -" {
		t.Errorf("half a second in: %q", got)
	}
}
