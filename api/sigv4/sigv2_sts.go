// SigV2's string to sign, in each of the forms clients build it, and its
// HMAC-SHA1, built into the verifier's scratch without allocating.
package sigv4

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"slices"
	"strings"
)

// v2Date is one way a client may have filled the date of its string to
// sign: the slot after Content-Type, and whether x-amz-date is also among
// the canonical x-amz-* headers.
type v2Date struct {
	slot string
	amz  bool
}

// v2HeaderDates appends to dst the date forms a header-signed request may
// carry. Without x-amz-date the slot is the Date header. With it, AWS's
// text leaves the slot empty, AWS's own example puts x-amz-date there (and
// not among the headers), and botocore keeps the Date header there. Every
// form binds the request time into the signature, so all are accepted.
func v2HeaderDates(dst []v2Date, h *headerIndex) []v2Date {
	date, amz := h.get(hDate), h.get(hAmzDate)
	if amz == "" {
		return append(dst, v2Date{slot: date, amz: true})
	}
	return append(dst, v2Date{slot: "", amz: true}, v2Date{slot: amz, amz: false}, v2Date{slot: date, amz: true})
}

// v2Path is a way clients sign a request's path.
type v2Path int

const (
	v2PathAsSent     v2Path = iota // as sent
	v2PathCanonical                // decoded and encoded again (unreserved bytes and '/' kept), as minio-go does
	v2PathSlash                    // a path-style bucket ("/bucket") with its slash ("/bucket/"), as botocore does
	v2PathFirstParam               // followed by the first query parameter as sent, as older botocore signs "/bucket?list-type=2"
	nV2Paths
)

// v2Form is one way of building a string to sign where clients differ.
type v2Form struct {
	date v2Date
	// keepEq keeps the '=' of a sub-resource sent with an empty value
	// ("uploads="), as botocore signs it; minio-go signs the bare name.
	keepEq bool
	path   v2Path
}

// v2PathApplies reports whether path p differs from the others for r, so
// that it is worth a try. sc.mac is used as scratch.
func v2PathApplies(r *Request, sc *scratch, p v2Path) bool {
	switch p {
	case v2PathCanonical:
		sc.mac = appendCanonicalURI(sc.mac[:0], r.RawPath)
		return string(sc.mac) != r.RawPath
	case v2PathSlash:
		return r.VirtualBucket == "" && len(r.RawPath) > 1 && strings.IndexByte(r.RawPath[1:], '/') < 0
	case v2PathFirstParam:
		first, _, _ := strings.Cut(r.RawQuery, "&")
		return first != ""
	}
	return true
}

// appendV2Path appends r's path as form p signs it.
func appendV2Path(b []byte, r *Request, p v2Path) []byte {
	switch p {
	case v2PathCanonical:
		return appendCanonicalURI(b, r.RawPath)
	case v2PathSlash:
		return append(append(b, r.RawPath...), '/')
	case v2PathFirstParam:
		first, _, _ := strings.Cut(r.RawQuery, "&")
		return append(append(append(b, r.RawPath...), '?'), first...)
	}
	return append(b, r.RawPath...)
}

// maxV2Signature bounds the base64 signature decoded (a SHA-1 is 28
// characters; padding and line breaks may add a few).
const maxV2Signature = 40

// v2Matches reports whether sig is the signature of r's string to sign
// in any of its forms: the date forms, and the others only where r makes
// them differ. Each form names the same request, so accepting any of them
// accepts nothing more. Each is compared in constant time; which form
// matched may show in the time taken, which tells nothing of the key.
func v2Matches(r *Request, sc *scratch, secret, sig string, dates []v2Date) bool {
	var want [maxV2Signature]byte
	if len(sig) > maxV2Signature {
		return false
	}
	n, err := base64.StdEncoding.Decode(want[:], []byte(sig))
	if err != nil || n != sha1.Size {
		return false
	}
	eqs := 1
	if emptySentWithEq(r.RawQuery, sc) {
		eqs = 2
	}
	for _, d := range dates {
		for e := 0; e < eqs; e++ {
			for p := v2PathAsSent; p < nV2Paths; p++ {
				if !v2PathApplies(r, sc, p) {
					continue
				}
				sc.buf = appendV2StringToSign(sc.buf[:0], r, sc, v2Form{date: d, keepEq: e == 0, path: p})
				var mac [sha1.Size]byte
				sc.mac, mac = hmacSHA1(secret, sc.buf, sc.mac)
				if hmac.Equal(mac[:], want[:n]) {
					return true
				}
			}
		}
	}
	return false
}

// hmacSHA1 is HMAC-SHA1 (RFC 2104) over a caller-provided scratch buffer
// instead of crypto/hmac's allocations (SigV2 keeps no derived key to
// hash the pads once). msg and scratch must not overlap.
func hmacSHA1(key string, msg, scratch []byte) ([]byte, [sha1.Size]byte) {
	if len(key) > hmacBlock {
		k := sha1.Sum([]byte(key))
		return hmacSHA1(string(k[:]), msg, scratch)
	}
	b := appendPad(scratch[:0], key, 0x36)
	b = append(b, msg...)
	inner := sha1.Sum(b)
	b = appendPad(b[:0], key, 0x5c)
	b = append(b, inner[:]...)
	return b, sha1.Sum(b)
}

// appendV2StringToSign appends r's SigV2 string to sign in form f.
func appendV2StringToSign(b []byte, r *Request, sc *scratch, f v2Form) []byte {
	b = append(b, r.Method...)
	b = append(b, '\n')
	b = append(b, strings.TrimSpace(sc.hdr.get(hContentMD5))...)
	b = append(b, '\n')
	b = append(b, strings.TrimSpace(sc.hdr.get(hContentType))...)
	b = append(b, '\n')
	b = append(b, strings.TrimSpace(f.date.slot)...)
	b = append(b, '\n')
	b = appendV2AmzHeaders(b, &sc.hdr, f.date.amz)
	if r.VirtualBucket != "" {
		b = append(b, '/')
		b = append(b, r.VirtualBucket...)
	}
	b = appendV2Path(b, r, f.path)
	return appendV2SubResources(b, r.RawQuery, sc, f.keepEq)
}

// appendV2AmzHeaders appends "name:v1,v2\n" for each x-amz-* header in
// name order, names lower-cased and values trimmed; x-amz-date only when
// withDate.
func appendV2AmzHeaders(b []byte, h *headerIndex, withDate bool) []byte {
	lo, hi := h.prefixed("x-amz-")
	for p := lo; p < hi; p++ {
		k := h.name(p)
		if len(k) == len("x-amz-") || (!withDate && compareFold(k, knownNames[hAmzDate]) == 0) {
			continue
		}
		if p > lo && compareFold(k, h.name(p-1)) == 0 {
			b[len(b)-1] = ',' // another value of the previous name
		} else {
			b = appendLower(b, k)
			b = append(b, ':')
		}
		b = append(b, strings.TrimSpace(h.value(p))...)
		b = append(b, '\n')
	}
	return b
}

// appendV2SubResources appends "?k1=v1&k2" for the sub-resources of the
// query, sorted by name, values decoded.
func appendV2SubResources(b []byte, rawQuery string, sc *scratch, keepEq bool) []byte {
	subs := sc.subs[:0]
	for _, p := range sc.pairs {
		if v2SubResources[p.key] {
			subs = append(subs, p)
		}
	}
	slices.SortStableFunc(subs, func(x, y queryPair) int { return strings.Compare(x.key, y.key) })
	for i, p := range subs {
		b = append(b, "?&"[min(i, 1)])
		b = append(b, p.key...)
		if p.value != "" || (keepEq && sentWithEq(rawQuery, p.key)) {
			b = append(b, '=')
			b = append(b, p.value...)
		}
	}
	sc.subs = subs
	return b
}

// emptySentWithEq reports whether a sub-resource was sent as "name=",
// which clients sign in two ways.
func emptySentWithEq(rawQuery string, sc *scratch) bool {
	for _, p := range sc.pairs {
		if p.value == "" && v2SubResources[p.key] && sentWithEq(rawQuery, p.key) {
			return true
		}
	}
	return false
}

// sentWithEq reports whether the raw query holds key followed by '='.
// Sub-resource names need no escaping, so the raw form is the name.
func sentWithEq(rawQuery, key string) bool {
	for rawQuery != "" {
		var seg string
		seg, rawQuery, _ = strings.Cut(rawQuery, "&")
		if k, _, eq := strings.Cut(seg, "="); k == key {
			return eq
		}
	}
	return false
}
