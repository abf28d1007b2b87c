// Tests of the taken-request ring and of the EINTR answers a supervisor
// writes from it on a kernel that cannot resend: which uniques are
// answered, with what, and the ring emptied after. The connection is a
// plain file here, read back to see the answers.
package fuse

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

func TestInterruptAnswersTheTakenRange(t *testing.T) {
	evens := func(from, to uint64) []uint64 {
		var u []uint64
		for ; from <= to; from += 2 {
			u = append(u, from)
		}
		return u
	}
	for _, c := range []struct {
		name     string
		noRing   bool
		taken    []uint64
		from, to uint64 // the uniques answered, step 2 (to 0: none)
	}{
		{name: "no ring: not a session", noRing: true},
		{name: "an empty ring", taken: nil},
		{name: "one request", taken: []uint64{2}, from: 2, to: 2 + 1024*2},
		{name: "out of order", taken: []uint64{14, 10, 12}, from: 10, to: 14 + 1024*2},
		{name: "an odd oldest rounds down", taken: []uint64{11, 20}, from: 10, to: 20 + 1024*2},
		// The ring keeps the newest 4096: the three oldest of 4099
		// are overwritten.
		{name: "a wrapped ring", taken: evens(2, 2*4099), from: 8, to: 2*4099 + 1024*2},
	} {
		state := t.TempDir()
		if !c.noRing {
			ring, err := openInflight(state)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range c.taken {
				ring.track(u)
			}
		}
		conn, err := os.CreateTemp(t.TempDir(), "conn")
		if err != nil {
			t.Fatal(err)
		}
		n, err := (&Conn{file: conn, state: state}).Interrupt()
		conn.Close()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var want []uint64
		if c.to != 0 {
			want = evens(c.from, c.to)
		}
		got := eintrAnswers(t, conn.Name())
		if n != len(want) || !slices.Equal(got, want) {
			t.Errorf("%s: %d answers for %d uniques %s, want %s", c.name, n, len(got), span(got), span(want))
		}
		if ring, err := os.ReadFile(filepath.Join(state, inflightFile)); !c.noRing &&
			(err != nil || len(ring) != inflightSlots*8 || slices.ContainsFunc(ring, func(b byte) bool { return b != 0 })) {
			t.Errorf("%s: the ring was not emptied for the next worker (%v)", c.name, err)
		}
	}
}

// eintrAnswers parses the answers written to path: each a bare out
// header of EINTR; it returns their uniques.
func eintrAnswers(t *testing.T, path string) []uint64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b)%16 != 0 {
		t.Fatalf("answers: %v, %d bytes", err, len(b))
	}
	var u []uint64
	for ; len(b) > 0; b = b[16:] {
		if binary.LittleEndian.Uint32(b) != 16 || int32(binary.LittleEndian.Uint32(b[4:])) != -int32(syscall.EINTR) {
			t.Fatalf("answer %x is not a bare EINTR header", b[:16])
		}
		u = append(u, binary.LittleEndian.Uint64(b[8:]))
	}
	return u
}

// span describes uniques by their ends.
func span(u []uint64) string {
	if len(u) == 0 {
		return "[]"
	}
	return fmt.Sprintf("[%d .. %d]", u[0], u[len(u)-1])
}
