// Tests of the warm-up progress on a terminal: every redraw fits the
// terminal's width, at 80 and 120 columns, on a real pseudo-terminal.
package main

import (
	"bytes"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/granary-dev/granary/ops"
)

// openPTY opens a pseudo-terminal of cols columns: the master to read
// what was drawn, the terminal to draw on.
func openPTY(t *testing.T, cols int) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(cols), Row: 24}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return m, s
}

var ansiEscape = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)

func TestWarmProgressFitsTerminal(t *testing.T) {
	start := time.Now().Add(-90 * time.Second)
	spec := ops.WarmSpec{Bucket: "imagenet-training-data-2024", Prefix: "train/very/long/prefix/of/shards/"}
	steps := []ops.WarmStatus{
		{Spec: spec, Started: start, Listing: true, Listed: 1200, Queued: 1200, QueuedBytes: 90 << 30},
		{Spec: spec, Started: start, Listing: true, Listed: 812345, Queued: 812345, QueuedBytes: 900 << 30,
			Fetched: 5041, FetchedBytes: 3 << 30, Cached: 120345, Failed: 12},
		{Spec: spec, Started: start, Listed: 1281167, Queued: 1281167, QueuedBytes: 1023 << 30,
			Fetched: 1200000, FetchedBytes: 1000 << 30, Cached: 81167, Failed: 1000},
	}
	for _, cols := range []int{80, 120} {
		t.Run(strconv.Itoa(cols), func(t *testing.T) {
			master, tty := openPTY(t, cols)
			drawn := make(chan []byte)
			go func() { b, _ := io.ReadAll(master); drawn <- b }()
			p := newWarmProgress(tty)
			if p.tty == nil {
				t.Fatal("the pseudo-terminal is not taken for a terminal")
			}
			for _, st := range steps {
				p.update(st)
			}
			tty.Close() // the reader sees the end
			out := <-drawn
			redraws := 0
			for _, line := range regexp.MustCompile(`[\r\n]`).Split(string(out), -1) {
				line = ansiEscape.ReplaceAllString(line, "")
				if w := utf8.RuneCountInString(strings.TrimRight(line, " ")); w > cols {
					t.Errorf("a redraw %d columns wide on a %d-column terminal: %q", w, cols, line)
				}
				if strings.Contains(line, "%") {
					redraws++
				}
			}
			if redraws < len(steps) {
				t.Errorf("%d redraws of %d updates: %q", redraws, len(steps), out)
			}
			if cols >= 120 && !bytes.Contains(out, []byte("1200000/1281167 objects")) {
				t.Errorf("at %d columns the counts are cut: %q", cols, out)
			}
		})
	}
}

func TestWarmDescription(t *testing.T) {
	st := ops.WarmStatus{Spec: ops.WarmSpec{Bucket: "b", Prefix: "p/"}, Fetched: 3, Queued: 10, Cached: 1,
		FetchedBytes: 2 << 10, QueuedBytes: 10 << 10}
	for _, c := range []struct {
		width int
		want  string
	}{
		{100, "warm s3://b/p/: 3/10 objects (2.0 KiB/10 KiB), 1 cached, 0 failed "},
		{60, "3/10 objects (2.0 KiB/10 KiB), 1 cached, 0 failed "},
		{40, "3/10 objects, 1 cached, 0 failed "},
		{20, "3/10 objects "},
		{5, ""},
	} {
		if got := warmDescription(st, c.width); got != c.want {
			t.Errorf("width %d: %q, want %q", c.width, got, c.want)
		}
	}
}
