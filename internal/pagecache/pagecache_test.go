// Drop waits for Keep, in one process as across processes: flock locks
// belong to open files, and each call opens its own.
package pagecache

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestDropWaitsForKeep(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("drop_caches needs root")
	}
	release, err := Keep()
	if err != nil {
		t.Fatal(err)
	}
	defer func(l time.Duration) { waitLimit = l }(waitLimit)
	waitLimit = 200 * time.Millisecond
	if err := Drop(PageCache); err == nil || !strings.Contains(err.Error(), "still kept") {
		t.Fatalf("Drop while the cache is kept: %v, want the wait to end in an error", err)
	}
	second, err := Keep() // Keeps share the lock
	if err != nil {
		t.Fatal(err)
	}
	release()
	if err := Drop(PageCache); err == nil {
		t.Fatal("Drop while a second Keep is held succeeded")
	}
	second()
	waitLimit = time.Minute
	if err := Drop(PageCache); err != nil {
		t.Fatalf("Drop once nothing is kept: %v", err)
	}
}
