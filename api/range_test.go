// The Range header parser: table cases and a fuzz target.
package api

import (
	"testing"

	"github.com/granary-dev/granary/gateway"
)

func TestParseRange(t *testing.T) {
	cases := []struct {
		in   string
		want gateway.Range
		kind rangeKind
	}{
		{"", gateway.Range{}, rangeNone},
		{"bytes=0-0", gateway.Range{Start: 0, End: 0}, rangeValid},
		{"bytes=10-19", gateway.Range{Start: 10, End: 19}, rangeValid},
		{"BYTES=10-19", gateway.Range{Start: 10, End: 19}, rangeValid},
		{" bytes= 5- ", gateway.Range{Start: 5, End: -1}, rangeValid},
		{"bytes=5-", gateway.Range{Start: 5, End: -1}, rangeValid},
		{"bytes=-7", gateway.Range{Suffix: 7}, rangeValid},
		{"bytes=-0", gateway.Range{}, rangeUnsatisfiable},
		{"bytes=9-2", gateway.Range{}, rangeNone},
		{"bytes=0-1,3-4", gateway.Range{}, rangeNone},
		{"bytes=-", gateway.Range{}, rangeNone},
		{"bytes=", gateway.Range{}, rangeNone},
		{"bytes=a-b", gateway.Range{}, rangeNone},
		{"bytes=1-2-3", gateway.Range{}, rangeNone},
		{"bytes=--1", gateway.Range{}, rangeNone},
		{"bytes 1-2", gateway.Range{}, rangeNone},
		{"items=1-2", gateway.Range{}, rangeNone},
		{"bytes=99999999999999999999-", gateway.Range{}, rangeNone},
		{"bytes=9223372036854775807-", gateway.Range{Start: 9223372036854775807, End: -1}, rangeValid},
	}
	for _, c := range cases {
		got, kind := parseRange([]byte(c.in))
		if got != c.want || kind != c.kind {
			t.Errorf("parseRange(%q) = %+v, %d; want %+v, %d", c.in, got, kind, c.want, c.kind)
		}
	}
}

// FuzzParseRange checks that any header parses without panicking into a
// range the engine can resolve consistently.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"bytes=0-1", "bytes=-5", "bytes=5-", "bytes=1-0", "bytes=0-1,2-3", "bytes=-0", ""} {
		f.Add(s, int64(100))
	}
	f.Fuzz(func(t *testing.T, h string, size int64) {
		r, kind := parseRange([]byte(h))
		if kind != rangeValid {
			if r != (gateway.Range{}) {
				t.Fatalf("%q: kind %d with range %+v", h, kind, r)
			}
			return
		}
		if r.Suffix < 0 || r.Start < 0 || (r.Suffix == 0 && r.End >= 0 && r.End < r.Start) {
			t.Fatalf("%q: invalid range %+v", h, r)
		}
		if size < 0 {
			return
		}
		off, n, err := r.Resolve(size)
		if err == nil && (off < 0 || n <= 0 || off+n > size) {
			t.Fatalf("%q on %d bytes: off %d n %d", h, size, off, n)
		}
	})
}
