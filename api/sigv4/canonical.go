// The canonical request of Signature Version 4: S3-style URI encoding (no
// double encoding, no path normalisation), the sorted canonical query and
// the canonical headers, built into a pooled buffer so that verifying a
// request allocates little.
package sigv4

import (
	"cmp"
	"crypto/sha256"
	"encoding"
	"hash"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// queryPair is one decoded query parameter.
type queryPair struct{ key, value string }

// scratch is per-Verify working memory, recycled through scratchPool.
type scratch struct {
	buf   []byte      // canonical request, then string to sign
	mac   []byte      // HMAC input blocks
	pairs []queryPair // decoded query parameters, in request order until sorted
	hdr   headerIndex // the request's header fields, indexed
	subs  []queryPair // SigV2's sub-resources
	// query holds the decoded query before it becomes one string;
	// queryEnds the end of each key and value in it.
	query     []byte
	queryEnds []int
	sha       stateHash // made on first use by digest
}

// stateHash is a SHA-256 digest whose state can be set (macKey.sum).
type stateHash interface {
	hash.Hash
	encoding.BinaryUnmarshaler
}

// digest returns sc's SHA-256 digest, in no particular state.
func (sc *scratch) digest() stateHash {
	if sc.sha == nil {
		sc.sha = sha256.New().(stateHash)
	}
	return sc.sha
}

var scratchPool = sync.Pool{New: func() any {
	return &scratch{
		buf: make([]byte, 0, 1024), mac: make([]byte, 0, 512), pairs: make([]queryPair, 0, 8),
		hdr: headerIndex{byName: make([]int, 0, 16)},
	}
}}

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

// putScratch recycles sc unless it grew too large to be worth keeping.
// The pairs and header are dropped so the pool does not pin request
// strings.
func putScratch(sc *scratch) {
	if cap(sc.buf) > 64<<10 || cap(sc.mac) > 64<<10 || cap(sc.pairs) > 256 || cap(sc.subs) > 256 || cap(sc.query) > 64<<10 || cap(sc.hdr.byName) > 256 {
		return
	}
	sc.hdr.h = nil
	clear(sc.subs)
	sc.subs = sc.subs[:0]
	clear(sc.pairs)
	sc.pairs = sc.pairs[:0]
	sc.buf = sc.buf[:0]
	scratchPool.Put(sc)
}

// parseQuery decodes raw into sc.pairs. It never fails: a malformed escape
// stays literal, as it would in the client's canonical form. A query with
// something to decode is decoded whole into one string, so it costs one
// allocation however many parameters are escaped; one without costs none.
func (sc *scratch) parseQuery(raw string) {
	sc.pairs = sc.pairs[:0]
	if !strings.ContainsAny(raw, "%+") {
		for raw != "" {
			var seg string
			seg, raw, _ = strings.Cut(raw, "&")
			if seg != "" {
				k, v, _ := strings.Cut(seg, "=")
				sc.pairs = append(sc.pairs, queryPair{k, v})
			}
		}
		return
	}
	b, ends := sc.query[:0], sc.queryEnds[:0]
	for raw != "" {
		var seg string
		seg, raw, _ = strings.Cut(raw, "&")
		if seg == "" {
			continue
		}
		k, v, _ := strings.Cut(seg, "=")
		b = appendUnescaped(b, k)
		ends = append(ends, len(b))
		b = appendUnescaped(b, v)
		ends = append(ends, len(b))
	}
	sc.query, sc.queryEnds = b, ends
	str := string(b)
	start := 0
	for i := 0; i < len(ends); i += 2 {
		sc.pairs = append(sc.pairs, queryPair{str[start:ends[i]], str[ends[i]:ends[i+1]]})
		start = ends[i+1]
	}
}

// has reports whether the query holds key.
func (sc *scratch) has(key string) bool {
	_, ok := sc.get(key)
	return ok
}

// get returns the first value of key.
func (sc *scratch) get(key string) (string, bool) {
	for _, p := range sc.pairs {
		if p.key == key {
			return p.value, true
		}
	}
	return "", false
}

// canonicalHash returns the SHA-256 of the canonical request of r as a signs it.
func canonicalHash(r *Request, sc *scratch, a *authInfo) [32]byte {
	b := sc.buf[:0]
	b = append(b, r.Method...)
	b = append(b, '\n')
	b = appendCanonicalURI(b, r.RawPath)
	b = append(b, '\n')
	b = appendCanonicalQuery(b, sc.pairs, a.presigned)
	b = append(b, '\n')
	// Clients sign their names sorted, the order of byName: one merge walk
	// finds every name's fields (every field before pos sorts before
	// last). A name out of order is searched for.
	pos, last := 0, ""
	for rest := a.signedHeaders; rest != ""; {
		var name string
		name, rest, _ = strings.Cut(rest, ";")
		var lo, hi int
		if name > last {
			lo, hi = sc.hdr.runFrom(pos, name)
			pos, last = hi, name
		} else {
			lo, hi = sc.hdr.run(name)
		}
		b = appendCanonicalHeader(b, r, &sc.hdr, name, lo, hi)
	}
	b = append(b, '\n')
	b = append(b, a.signedHeaders...)
	b = append(b, '\n')
	b = append(b, a.payload...)
	sc.buf = b
	return sha256.Sum256(b)
}

// appendCanonicalURI decodes each %XX of raw once and encodes every byte
// but the unreserved ones and '/', which makes clients that escape
// differently agree. '+' is a literal plus in a path.
func appendCanonicalURI(b []byte, raw string) []byte {
	if raw == "" {
		return append(b, '/')
	}
	for i := 0; i < len(raw); i++ {
		// A run of bytes that stay as they are is copied at once.
		j := i
		for j < len(raw) && uriVerbatim[raw[j]] {
			j++
		}
		b = append(b, raw[i:j]...)
		if i = j; i == len(raw) {
			break
		}
		c := raw[i]
		if c == '%' && i+2 < len(raw) && isHex(raw[i+1]) && isHex(raw[i+2]) {
			c = unhex(raw[i+1])<<4 | unhex(raw[i+2])
			i += 2
		}
		if c == '/' {
			b = append(b, c)
		} else {
			b = appendEscaped(b, c)
		}
	}
	return b
}

// uriVerbatim holds the bytes a canonical URI keeps as sent: the
// unreserved ones and '/'.
var uriVerbatim = func() (t [256]bool) {
	for i := range t {
		t[i] = i == '/' || isUnreserved(byte(i))
	}
	return t
}()

// AppendEscapedPath appends path, unescaped, escaped as the canonical
// URI of a signature has it: every byte but the unreserved ones and '/'
// as %XX. A URL written so is signed by any client (boto3 signs the path
// as it finds it) as this package checks it.
func AppendEscapedPath(b []byte, path string) []byte {
	for i := 0; i < len(path); i++ {
		if c := path[i]; c == '/' {
			b = append(b, c)
		} else {
			b = appendEscaped(b, c)
		}
	}
	return b
}

// appendCanonicalQuery sorts the parameters by key then value and appends
// them AWS-encoded; a presigned request leaves out its own signature.
func appendCanonicalQuery(b []byte, pairs []queryPair, presigned bool) []byte {
	if len(pairs) > 1 {
		slices.SortFunc(pairs, func(x, y queryPair) int {
			if c := strings.Compare(x.key, y.key); c != 0 {
				return c
			}
			return cmp.Compare(x.value, y.value)
		})
	}
	first := true
	for _, p := range pairs {
		if presigned && p.key == "X-Amz-Signature" {
			continue
		}
		if !first {
			b = append(b, '&')
		}
		first = false
		b = appendEncoded(b, p.key)
		b = append(b, '=')
		b = appendEncoded(b, p.value)
	}
	return b
}

// appendCanonicalHeader appends "name:value\n" for one signed header
// whose fields are at [lo, hi) in h.byName, the values of a repeated
// header joined by ','.
func appendCanonicalHeader(b []byte, r *Request, h *headerIndex, name string, lo, hi int) []byte {
	b = append(b, name...)
	b = append(b, ':')
	switch {
	case lo == hi && name == "host":
		b = appendTrimmed(b, r.Host)
	case lo == hi && name == "content-length" && r.ContentLength >= 0:
		b = strconv.AppendInt(b, r.ContentLength, 10)
	}
	for p := lo; p < hi; p++ {
		if p > lo {
			b = append(b, ',')
		}
		b = appendTrimmed(b, h.value(p))
	}
	return append(b, '\n')
}

// appendTrimmed appends v without leading and trailing white space and with
// each inner run of white space collapsed to one space.
func appendTrimmed(b []byte, v string) []byte {
	if isTrimmed(v) {
		return append(b, v...)
	}
	space, started := false, false
	for i := 0; i < len(v); {
		c := v[i]
		size := 1
		isSpace := c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
		if c >= utf8.RuneSelf {
			var r rune
			r, size = utf8.DecodeRuneInString(v[i:])
			isSpace = unicode.IsSpace(r)
		}
		if isSpace {
			space = started
		} else {
			if space {
				b = append(b, ' ')
				space = false
			}
			b = append(b, v[i:i+size]...)
			started = true
		}
		i += size
	}
	return b
}

// isTrimmed reports whether appendTrimmed would leave v as it is: ASCII
// without control bytes, edge spaces or runs of spaces (most values).
func isTrimmed(v string) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < ' ' || c >= utf8.RuneSelf || (c == ' ' && (i == 0 || i == len(v)-1 || v[i-1] == ' ')) {
			return false
		}
	}
	return true
}

// appendEncoded appends s with every byte but the unreserved ones escaped.
func appendEncoded(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		b = appendEscaped(b, s[i])
	}
	return b
}

// appendEscaped appends c, escaped as %XX unless it is unreserved
// (A-Z a-z 0-9 - _ . ~).
func appendEscaped(b []byte, c byte) []byte {
	if isUnreserved(c) {
		return append(b, c)
	}
	const hexUpper = "0123456789ABCDEF"
	return append(b, '%', hexUpper[c>>4], hexUpper[c&15])
}

func isUnreserved(c byte) bool {
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		c == '-' || c == '_' || c == '.' || c == '~'
}

// appendUnescaped appends s with its %XX escapes decoded and '+' as a
// space (a query's form); a '%' not followed by two hex digits stays
// literal.
func appendUnescaped(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			c = unhex(s[i+1])<<4 | unhex(s[i+2])
			i += 2
		case c == '+':
			c = ' '
		}
		b = append(b, c)
	}
	return b
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}
