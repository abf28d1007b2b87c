// Crash recovery: a child process writes through a Log and is killed with
// SIGKILL mid-upload; every write it acknowledged must reach the origin.
package writeback

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/store"
)

// childEnv, when set, makes the test binary a crash child; the other
// variables tell it where to write.
const (
	childEnv     = "GRANARY_WRITEBACK_CRASH_CHILD"
	childDir     = "GRANARY_WRITEBACK_CRASH_DIR"
	childBucket  = "GRANARY_WRITEBACK_CRASH_BUCKET"
	childServer  = "GRANARY_WRITEBACK_CRASH_ENDPOINT"
	childObjects = 40
)

// crashData is the content of version v of key in the crash test.
func crashData(key string, v int) []byte {
	seed := uint64(v) << 32
	for _, c := range key {
		seed = seed*31 + uint64(c)
	}
	size := []int{0, 1000, 64 << 10, 700 << 10}[v%4]
	return payload(size, seed)
}

func TestCrashRecovery(t *testing.T) {
	raw := s3Origin(t)
	b := newBucket(t, raw)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), opTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"=1", childDir+"="+dir, childBucket+"="+b,
		childServer+"="+server.Endpoint+" "+server.AccessKey+" "+server.SecretKey)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Acknowledged versions: key -> the newest version acked.
	acked := map[string]int{}
	sc := bufio.NewScanner(out)
	for n := 0; n < 21 && sc.Scan(); {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "acked" {
			v, _ := strconv.Atoi(f[2])
			acked[f[1]] = v
			n++
		}
	}
	cmd.Process.Kill() // SIGKILL: no Close, no flush
	io.Copy(io.Discard, out)
	cmd.Wait()
	if len(acked) < 10 {
		t.Fatalf("child acknowledged %d keys before the kill; stderr:\n%s", len(acked), stderr.String())
	}

	l := openLog(t, Options{Origin: raw, Dir: dir, RetryMin: time.Millisecond})
	if st := l.Stats(); st.DirtyObjects == 0 {
		t.Errorf("nothing was pending at the kill (%+v): the test proves nothing", st)
	}
	flush(t, l, b)
	for key, v := range acked {
		got, _ := read(t, raw, b, key)
		// A newer version journaled but not yet acknowledged may have
		// landed too; an older one must not.
		ok := false
		for w := v; w < childObjects && !ok; w++ {
			ok = bytes.Equal(got, crashData(key, w))
		}
		if !ok {
			t.Errorf("%s: origin holds %d bytes, none of the versions since the acked %d", key, len(got), v)
		}
	}
}

// TestCrashChild is the child of TestCrashRecovery: it writes objects
// through a Log whose origin is slow, printing each acknowledgement, and
// waits to be killed.
func TestCrashChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("run by TestCrashRecovery")
	}
	srv := strings.Fields(os.Getenv(childServer))
	server = &miniotest.Server{Endpoint: srv[0], AccessKey: srv[1], SecretKey: srv[2]}
	b := os.Getenv(childBucket)
	l, err := Open(Options{Origin: &slowOrigin{Origin: s3Origin(t)}, Dir: os.Getenv(childDir), WriteBack: always,
		RetryMin: 10 * time.Millisecond, RetryMax: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	l.Start()
	ctx := context.Background()
	for i := range childObjects {
		// A key of its own, and one overwritten every time.
		for _, key := range []string{fmt.Sprintf("obj-%02d", i), "same"} {
			data := crashData(key, i)
			if _, err := l.Put(ctx, b, key, bytes.NewReader(data), int64(len(data)), store.ObjectMeta{}); err != nil {
				t.Fatal(err)
			}
			fmt.Printf("acked %s %d\n", key, i)
		}
	}
	time.Sleep(opTimeout) // killed long before
}

// slowOrigin delays every upload, so the child is killed with uploads in
// flight and writes waiting.
type slowOrigin struct{ store.Origin }

func (s *slowOrigin) Put(ctx context.Context, bucket, key string, body io.Reader, size int64, meta store.ObjectMeta) (store.ObjectInfo, error) {
	select {
	case <-time.After(50 * time.Millisecond):
	case <-ctx.Done():
		return store.ObjectInfo{}, ctx.Err()
	}
	return s.Origin.Put(ctx, bucket, key, body, size, meta)
}
