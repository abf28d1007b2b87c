// The build directories of test binaries long gone are removed.
package hdfstest

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestRemoveStaleBuilds(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	for name, age := range map[string]time.Duration{
		binaryDirs + "old": 2 * staleAfter, binaryDirs + "new": time.Minute, "other-old": 2 * staleAfter,
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Join(p, "x"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	removeStale(dir, now.Add(-staleAfter))
	for name, kept := range map[string]bool{binaryDirs + "old": false, binaryDirs + "new": true, "other-old": true} {
		if _, err := os.Stat(filepath.Join(dir, name)); (err == nil) != kept {
			t.Errorf("%s: stat %v, want kept %v", name, err, kept)
		}
	}
}
