// The Range request header, parsed the way S3 reads it: one byte range in
// the forms "bytes=a-b", "bytes=a-" and "bytes=-n"; anything else (another
// unit, several ranges, a malformed or reversed range) is ignored and the
// whole object is sent.
package api

import (
	"math"

	"github.com/granary-dev/granary/gateway"
)

// rangeKind is the outcome of parsing a Range header.
type rangeKind uint8

const (
	rangeNone          rangeKind = iota // absent or ignored: send the whole object
	rangeValid                          // a range to resolve against the size
	rangeUnsatisfiable                  // "bytes=-0": no object can satisfy it
)

// parseRange parses a Range header value.
func parseRange(h []byte) (gateway.Range, rangeKind) {
	const unit = "bytes="
	h = trimSpace(h)
	if len(h) < len(unit) || !asciiEqualFold(h[:len(unit)], unit) {
		return gateway.Range{}, rangeNone
	}
	spec := trimSpace(h[len(unit):])
	dash := -1
	for i, c := range spec {
		switch {
		case c == '-' && dash < 0:
			dash = i
		case c < '0' || c > '9':
			return gateway.Range{}, rangeNone // a second '-', ',', junk
		}
	}
	if dash < 0 {
		return gateway.Range{}, rangeNone
	}
	first, last := spec[:dash], spec[dash+1:]
	if len(first) == 0 { // "-n": the last n bytes
		n, ok := parseDigits(last)
		if !ok {
			return gateway.Range{}, rangeNone
		}
		if n == 0 {
			return gateway.Range{}, rangeUnsatisfiable
		}
		return gateway.Range{Suffix: n}, rangeValid
	}
	start, ok := parseDigits(first)
	if !ok {
		return gateway.Range{}, rangeNone
	}
	if len(last) == 0 { // "a-": from a to the end
		return gateway.Range{Start: start, End: -1}, rangeValid
	}
	end, ok := parseDigits(last)
	if !ok || end < start {
		return gateway.Range{}, rangeNone
	}
	return gateway.Range{Start: start, End: end}, rangeValid
}

// parseDigits parses a non-empty run of decimal digits that fits an int64.
func parseDigits(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// trimSpace drops the spaces and tabs around b.
func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// asciiEqualFold compares b with the lower-case ASCII s, ignoring case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
