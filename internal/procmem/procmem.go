// Package procmem measures the memory a process holds that its resident
// set does not show: the pages of its memory files (memfds), which count
// in its RSS only while, and where, it maps them. A Granary node keeps
// its RAM tier's large chunks in one (store/ram's arena) and writes them
// without mapping them, so a budget check that read VmRSS alone would
// miss most of the tier.
package procmem

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// MemfdBytes is the memory the memory files pid holds open hold now: the
// blocks allocated to each, counted once however many descriptors name
// it.
func MemfdBytes(pid int) (int64, error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	seen := map[uint64]bool{}
	var n int64
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		target, err := os.Readlink(p)
		if err != nil || !strings.HasPrefix(target, "/memfd:") {
			continue // closed since the listing, or not a memory file
		}
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil || seen[st.Ino] {
			continue
		}
		seen[st.Ino] = true
		n += st.Blocks * 512
	}
	return n, nil
}
