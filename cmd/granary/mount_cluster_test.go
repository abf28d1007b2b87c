// The mount in front of a cluster: it reads each chunk from the member
// that owns it, whichever member it was pointed at, and through that
// member when an owner stops answering.
package main

import (
	"crypto/sha256"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/granary-dev/granary/internal/miniotest"
)

// readSums reads every file of sums under dir and compares its sha256.
func readSums(t *testing.T, dir string, sums map[string][32]byte) {
	t.Helper()
	for key, want := range sums {
		b, err := readWithin(t, filepath.Join(dir, key), 30*time.Second)
		if err != nil || sha256.Sum256(b) != want {
			t.Errorf("%s: %d bytes, %v; sha256 differs from the object's: %v", key, len(b), err, sha256.Sum256(b) != want)
		}
	}
}

func TestMountReadsFromOwners(t *testing.T) {
	needFUSE(t)
	mio := miniotest.StartT(t)
	r := startCluster(t, mio, "s3://"+mio.Endpoint+"?secure=false", 3, "--ram", "128MiB", "--disk", "0", "--chunk-size", "1MiB")
	origin, err := newS3Client("http://"+mio.Endpoint, envMap(minioEnv(mio)))
	if err != nil {
		t.Fatal(err)
	}
	// 21 chunks of 1 MiB: the ring gives each member some.
	sums := seed(t, origin, "data", "set/", map[string]int{"a.bin": 7 << 20, "b.bin": 7<<20 - 5, "c.bin": 6<<20 + 100})
	env := map[string]string{"GRANARY_ACCESS_KEY": r.env["GRANARY_ACCESS_KEY"], "GRANARY_SECRET_KEY": r.env["GRANARY_SECRET_KEY"]}
	n1 := "http://" + r.addrs[0]

	direct := t.TempDir()
	m := spawnMount(t, env, direct, "--endpoint", n1, "--prefix", "set", "--read-only", "data", direct)
	m.awaitMounted(t, 1)
	readSums(t, direct, sums)
	if hops := metric(t, r.addrs[0], "granary_peer_chunk_reads_total"); hops != 0 {
		t.Errorf("the member the mount was pointed at read %v chunks from its peers: the mount did not ask the owners", hops)
	}
	for i := 1; i < 3; i++ {
		if gets := metric(t, r.addrs[i], "granary_requests_total", `op="GetObject"`); gets == 0 {
			t.Errorf("member %s, owner of some chunks, answered no GET of the mount", r.ids[i])
		}
	}

	// Through the member only, the same reads cost it hops.
	via := t.TempDir()
	mv := spawnMount(t, env, via, "--endpoint", n1, "--prefix", "set", "--read-only", "--via-endpoint-only", "data", via)
	mv.awaitMounted(t, 1)
	readSums(t, via, sums)
	if hops := metric(t, r.addrs[0], "granary_peer_chunk_reads_total"); hops == 0 {
		t.Error("--via-endpoint-only: the member read no chunk from its peers, so the test above proves nothing")
	}

	// An owner that stops answering after the mount learned the ring:
	// its chunks come through the member.
	late := seed(t, origin, "late", "", map[string]int{"d.bin": 7 << 20, "e.bin": 7 << 20})
	lateDir := t.TempDir()
	ml := spawnMount(t, env, lateDir, "--endpoint", n1, "--read-only", "late", lateDir)
	ml.awaitMounted(t, 1)
	r.nodes[2].stop(t)
	r.nodes[2] = nil
	readSums(t, lateDir, late)
	if !strings.Contains(ml.stderr.String(), "owner did not answer") {
		t.Errorf("no read found the stopped owner silent (14 chunks, a third of them its):\n%s", ml.stderr.String())
	}
	for _, d := range []string{direct, via, lateDir} {
		if out, err := exec.Command("fusermount3", "-u", d).CombinedOutput(); err != nil {
			t.Fatalf("fusermount3 -u %s: %v: %s", d, err, out)
		}
	}
	for _, c := range []*mountChild{m, mv, ml} {
		c.awaitExit(t, exitOK, 20*time.Second)
	}
}
