// Header fields as received, and the one pass over them that Verify makes:
// it finds the fields read by name and orders every field by name, so the
// canonical headers, the unsigned-header check, SigV2's x-amz-* headers
// and the checksum headers are all read from that order without another
// walk of the fields and without a map.
package sigv4

import (
	"cmp"
	"slices"
)

// Field is one header field as received: its name in any case, its value
// untrimmed.
type Field struct{ Name, Value string }

// Header holds a request's header fields in the order received. A name
// may repeat; its values then count in that order.
type Header []Field

// The fields headerIndex finds by name; each slot holds the index of the
// first field of that name, or -1.
const (
	hAuthorization = iota
	hAmzDate
	hDate
	hContentSHA256
	hContentMD5
	hContentType
	hDecodedLength
	nKnown
)

// knownNames are the lower-case names of the known slots, in slot order.
var knownNames = [nKnown]string{
	hAuthorization: "authorization",
	hAmzDate:       "x-amz-date",
	hDate:          "date",
	hContentSHA256: "x-amz-content-sha256",
	hContentMD5:    "content-md5",
	hContentType:   "content-type",
	hDecodedLength: "x-amz-decoded-content-length",
}

// headerIndex is what the one pass over a Header finds. It lives in the
// scratch of one Verify and is rebuilt by index.
type headerIndex struct {
	h     Header
	known [nKnown]int
	// byName holds the indexes of h ordered by lower-case name, fields of
	// one name in the order received. All names with one prefix (x-amz-,
	// x-amz-checksum-) are therefore adjacent.
	byName []int
}

// index fills x from h in one pass.
func (x *headerIndex) index(h Header) {
	x.h = h
	for i := range x.known {
		x.known[i] = -1
	}
	x.byName = x.byName[:0]
	for i := range h {
		x.byName = append(x.byName, i)
		if k := knownSlot(h[i].Name); k >= 0 && x.known[k] < 0 {
			x.known[k] = i
		}
	}
	slices.SortStableFunc(x.byName, func(a, b int) int { return compareFold(h[a].Name, h[b].Name) })
}

// knownSlot returns the slot of name, -1 if it has none. The length picks
// the one candidate, so most fields cost one comparison.
func knownSlot(name string) int {
	k := -1
	switch len(name) {
	case len("authorization"):
		k = hAuthorization
	case len("x-amz-date"):
		k = hAmzDate
	case len("date"):
		k = hDate
	case len("x-amz-content-sha256"):
		k = hContentSHA256
	case len("content-md5"):
		k = hContentMD5
	case len("content-type"):
		k = hContentType
	case len("x-amz-decoded-content-length"):
		k = hDecodedLength
	}
	if k >= 0 && compareFold(name, knownNames[k]) == 0 {
		return k
	}
	return -1
}

// get returns the first value of a known field, "" if absent.
func (x *headerIndex) get(slot int) string {
	if i := x.known[slot]; i >= 0 {
		return x.h[i].Value
	}
	return ""
}

// has reports whether a known field is present.
func (x *headerIndex) has(slot int) bool { return x.known[slot] >= 0 }

// run returns the positions [lo, hi) in byName of the fields named name
// (any case).
func (x *headerIndex) run(name string) (lo, hi int) {
	return x.span(name, false)
}

// runFrom is run for a name not before any field at positions < from:
// a walk forward from there, for names looked up in order.
func (x *headerIndex) runFrom(from int, name string) (lo, hi int) {
	lo = from
	for lo < len(x.byName) && compareFold(x.name(lo), name) < 0 {
		lo++
	}
	hi = lo
	for hi < len(x.byName) && compareFold(x.name(hi), name) == 0 {
		hi++
	}
	return lo, hi
}

// prefixed returns the positions [lo, hi) in byName of the fields whose
// name starts with prefix (lower case), any case.
func (x *headerIndex) prefixed(prefix string) (lo, hi int) {
	return x.span(prefix, true)
}

// span binary-searches byName for the fields named key, or starting with
// key when prefix is set.
func (x *headerIndex) span(key string, prefix bool) (lo, hi int) {
	cut := func(name string) string {
		if prefix && len(name) > len(key) {
			return name[:len(key)]
		}
		return name
	}
	n := len(x.byName)
	lo, _ = slices.BinarySearchFunc(x.byName, key, func(i int, k string) int { return compareFold(cut(x.h[i].Name), k) })
	hi = lo
	for hi < n && compareFold(cut(x.h[x.byName[hi]].Name), key) == 0 {
		hi++
	}
	return lo, hi
}

// name and value of the field at position p of byName.
func (x *headerIndex) name(p int) string  { return x.h[x.byName[p]].Name }
func (x *headerIndex) value(p int) string { return x.h[x.byName[p]].Value }

// compareFold compares two header names as their ASCII lower-case forms.
// Equal bytes are passed without folding: names compared while sorting
// share prefixes (x-amz-) and mostly agree in case.
func compareFold(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] == b[i] {
			continue
		}
		ca, cb := lowerASCII(a[i]), lowerASCII(b[i])
		if ca != cb {
			if ca < cb {
				return -1
			}
			return 1
		}
	}
	return cmp.Compare(len(a), len(b))
}

func lowerASCII(c byte) byte { return lowerTable[c] }

// lowerTable maps each byte to its ASCII lower case.
var lowerTable = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
		if 'A' <= i && i <= 'Z' {
			t[i] += 'a' - 'A'
		}
	}
	return t
}()

// appendLower appends s in ASCII lower case.
func appendLower(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		b = append(b, lowerASCII(s[i]))
	}
	return b
}
