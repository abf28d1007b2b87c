//go:build linux

// The arena on Linux: a memfd mapped once, written with pwrite and
// emptied with a punched hole (see arena.go for why each).
package ram

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// osArena is the arena's memory: the memfd and its one mapping.
type osArena struct {
	fd    int
	mem   []byte
	unmap sync.Once
}

// openArena creates a memfd of span bytes (sparse: it holds no page until
// one is written) and maps it shared. It refuses where the kernel may
// back the file with huge pages: punching a slot out of a huge page
// another slot shares would zero its bytes in place, under a send.
func openArena(span int64) (*osArena, error) {
	if err := smallPagesOnly(); err != nil {
		return nil, err
	}
	fd, err := unix.MemfdCreate("granary-ram", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("ram: memfd: %w", err)
	}
	if err := unix.Ftruncate(fd, span); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("ram: size the memfd: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, int(span), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_NORESERVE)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("ram: map the memfd: %w", err)
	}
	unix.Madvise(mem, unix.MADV_NOHUGEPAGE) //nolint:errcheck // best effort: smallPagesOnly decided
	return &osArena{fd: fd, mem: mem}, nil
}

// shmemEnabled is where the kernel says when files in memory get huge pages.
const shmemEnabled = "/sys/kernel/mm/transparent_hugepage/shmem_enabled"

// smallPagesOnly fails unless the kernel gives a memfd written through
// pwrite small pages only: shmem_enabled "never", "advise" (no mapping
// of ours asks) or "deny", or no transparent huge pages at all.
func smallPagesOnly() error {
	b, err := os.ReadFile(shmemEnabled)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ram: %w", err)
	}
	s := string(b)
	if i, j := strings.IndexByte(s, '['), strings.IndexByte(s, ']'); i >= 0 && j > i {
		switch s[i+1 : j] {
		case "never", "advise", "deny":
			return nil
		}
		return fmt.Errorf("ram: %s is %q: memory files may get huge pages", shmemEnabled, s[i+1:j])
	}
	return fmt.Errorf("ram: cannot read %s: %q", shmemEnabled, s)
}

// write puts b at off.
func (o *osArena) write(off int64, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Pwrite(o.fd, b, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("ram: write the memfd: %w", err)
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}

// punch drops the pages of [off, off+n): the file reads zeros there and
// holds no memory for them. A page a send still holds stays, unchanged,
// with that send until it is done; off and n are whole pages, so no page
// is zeroed in place.
func (o *osArena) punch(off, n int64) error {
	return unix.Fallocate(o.fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
}

// close unmaps the file and closes it; every page goes.
func (o *osArena) close() {
	o.unmap.Do(func() {
		unix.Munmap(o.mem) //nolint:errcheck // the mapping is ours, whole
		unix.Close(o.fd)
	})
}
