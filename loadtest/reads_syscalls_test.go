// Tests of the system call census: strace's summary read as it prints
// it, the table's rows, and a real trace of a real process.
package main

import (
	"context"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// straceSample is strace -c's summary as strace 6.1 prints it.
const straceSample = `% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ------------------
 45.01    2.067158       20671       100         3 futex
 11.31    0.519434          19     26755           sendfile
  4.79    0.219812           4     49058     22281 read
  2.99    0.137349           5     26755           sendmsg
------ ----------- ----------- --------- --------- ------------------
100.00    2.943753          28    102668     22284 total
`

func TestParseStraceSummary(t *testing.T) {
	got, err := parseStraceSummary(straceSample)
	if err != nil {
		t.Fatal(err)
	}
	want := []syscallCount{{"read", 49058, 22281}, {"sendfile", 26755, 0}, {"sendmsg", 26755, 0}, {"futex", 100, 3}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if _, err := parseStraceSummary("strace: attach: ptrace(PTRACE_SEIZE, 1): Operation not permitted\n"); err == nil {
		t.Error("a summary with no calls parsed")
	}
}

func TestCensusTable(t *testing.T) {
	calls, err := parseStraceSummary(straceSample)
	if err != nil {
		t.Fatal(err)
	}
	r := &report{census: []censusRow{{set: "100KiB", conc: 16, target: "granary", gets: 26755, calls: calls}}}
	var b strings.Builder
	r.censusTable(&b)
	for _, want := range []string{
		"## System calls per warm GET",
		"| 100KiB | 16 | granary | 3.84 | read 1.83 (0.83 failed), sendfile 1.00, sendmsg 1.00, others under 0.01 |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	(&report{censusSkipped: "strace is not installed"}).censusTable(&b)
	if !strings.Contains(b.String(), "Not measured: strace is not installed.") {
		t.Errorf("a skipped census does not say why:\n%s", b.String())
	}
}

// TestUnderStraceCountsARealProcess traces cat while lines go through
// it and finds its reads and writes counted.
func TestUnderStraceCountsARealProcess(t *testing.T) {
	if _, err := exec.LookPath("strace"); err != nil {
		t.Fatal("strace is not installed (make deps installs it)")
	}
	cat := exec.Command("cat")
	in, err := cat.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cat.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cat.Process.Kill(); _ = cat.Wait() }()
	const lines = 50
	calls, err := underStrace(context.Background(), []int{cat.Process.Pid}, func() error {
		buf := make([]byte, 2)
		for range lines { // one line at a time: each is a read and a write of cat's
			if _, err := io.WriteString(in, "x\n"); err != nil {
				return err
			}
			if _, err := io.ReadFull(out, buf); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	counted := map[string]int64{}
	for _, c := range calls {
		counted[c.name] = c.calls
	}
	// strace counts a call as it returns, and detaches as soon as the
	// last line is back: cat's last write may still be on its way out of
	// strace's hands, so every line but the last must be counted.
	if counted["read"] < lines-1 || counted["write"] < lines-1 {
		t.Fatalf("%d lines through cat, counted %+v", lines, calls)
	}
}
