// Tests of the budget checks: the cgroup limit as v2 and v1 write it,
// and the warnings for --disk and --ram past what the machine gives.
package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		name, file, text string
		want             int64
		ok               bool
	}{
		{"v2 limit", "memory.max", "4294967296\n", 4 << 30, true},
		{"v2 none", "memory.max", "max\n", 0, false},
		{"v1 limit", "memory/memory.limit_in_bytes", "1073741824\n", 1 << 30, true},
		{"v1 none", "memory/memory.limit_in_bytes", "9223372036854771712\n", 0, false},
		{"garbage", "memory.max", "lots\n", 0, false},
		{"no file", "", "", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			if c.file != "" {
				path := filepath.Join(root, c.file)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got, ok := memoryLimit(root); got != c.want || ok != c.ok {
				t.Errorf("memoryLimit = %d, %v; want %d, %v", got, ok, c.want, c.ok)
			}
		})
	}
}

func TestBudgetWarnings(t *testing.T) {
	const gib = 1 << 30
	for _, c := range []struct {
		name      string
		disk, ram Size
		room      budgetRoom
		want      []string // a fragment of each warning, in order
	}{
		{"fits", 50 * gib, 4 * gib, budgetRoom{diskRoom: 59 * gib, memLimit: 8 * gib}, nil},
		{"disk past free", 5000 * gib, 4 * gib, budgetRoom{diskRoom: 59 * gib, memLimit: 8 * gib},
			[]string{"exceeds the 59 GiB the data directory's filesystem has room for"}},
		{"ram past limit", 10 * gib, 16 * gib, budgetRoom{diskRoom: 59 * gib, memLimit: 8 * gib},
			[]string{"exceeds the container's memory limit of 8.0 GiB"}},
		{"both", 100 * gib, 16 * gib, budgetRoom{diskRoom: 59 * gib, memLimit: 8 * gib},
			[]string{"--disk", "--ram"}},
		{"unknown room", 5000 * gib, 16 * gib, budgetRoom{}, nil},
		{"tiers off", 0, 0, budgetRoom{diskRoom: 1, memLimit: 1}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := budgetWarnings(c.disk, c.ram, c.room)
			if len(got) != len(c.want) {
				t.Fatalf("warnings %q, want %d", got, len(c.want))
			}
			for i, w := range c.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("warning %q lacks %q", got[i], w)
				}
			}
		})
	}
}

// TestFSFree: the data directory's filesystem reports some free bytes.
func TestFSFree(t *testing.T) {
	n, err := fsFree(t.TempDir())
	if err != nil || n <= 0 {
		t.Fatalf("fsFree = %d, %v", n, err)
	}
	if _, err := fsFree(filepath.Join(t.TempDir(), "absent")); err == nil {
		t.Error("fsFree of a missing path: no error")
	}
}
