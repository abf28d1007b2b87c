// Signatures: the string to sign, its HMAC under a cached key without
// allocating, and the constant-time comparison with the signature a
// request carries.
package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding"
	"encoding/hex"

	"github.com/granary-dev/granary/api/s3err"
)

// checkSignature derives a's signing key, computes the signature of r and
// compares it with the one r carries, in constant time.
func (v *Verifier) checkSignature(r *Request, sc *scratch, a *authInfo) error {
	c := v.cache()
	key, cached := c.signingKey(a)
	a.key = key.key
	crHash := canonicalHash(r, sc, a)
	b := sc.buf[:0]
	b = append(b, algorithm...)
	b = append(b, '\n')
	b = append(b, a.amzDate...)
	b = append(b, '\n')
	b = append(b, a.scope...)
	b = append(b, '\n')
	b = hex.AppendEncode(b, crHash[:])
	sc.buf = b
	mac := key.sum(sc, b)
	if !sigEqual(mac[:], a.signature) {
		return s3err.New(s3err.SignatureDoesNotMatch, "")
	}
	if !cached {
		c.store(keyID{a.accessKey, a.date, a.region}, a.secret, key)
	}
	a.seed = mac
	return nil
}

// macKey is a signing key with the SHA-256 states after HMAC's inner and
// outer pad blocks (as crypto/sha256 marshals them), so an HMAC under it
// hashes the message and the inner sum only: two blocks fewer per
// request than from the key alone. A key is derived once per day and
// cached (keycache.go); it is never changed once made.
type macKey struct {
	key          [32]byte
	inner, outer []byte
}

// newMACKey hashes key's two pad blocks.
func newMACKey(key [32]byte) *macKey {
	k := &macKey{key: key}
	var pad []byte
	for _, p := range []struct {
		dst *[]byte
		x   byte
	}{{&k.inner, 0x36}, {&k.outer, 0x5c}} {
		h := sha256.New()
		pad = appendPad(pad[:0], key[:], p.x)
		h.Write(pad)
		*p.dst, _ = h.(encoding.BinaryAppender).AppendBinary(nil)
	}
	return k
}

// sum returns HMAC-SHA256(k, msg), hashing with sc's digest.
func (k *macKey) sum(sc *scratch, msg []byte) (out [32]byte) {
	h := sc.digest()
	// The states were marshaled by this package's own SHA-256: they
	// always unmarshal.
	_ = h.UnmarshalBinary(k.inner)
	h.Write(msg)
	sc.mac = h.Sum(sc.mac[:0])
	_ = h.UnmarshalBinary(k.outer)
	h.Write(sc.mac)
	sc.mac = h.Sum(sc.mac[:0])
	copy(out[:], sc.mac)
	return out
}

// hmacBlock is the block size of SHA-1 and SHA-256.
const hmacBlock = 64

// appendPad appends key, zero-filled to a block, XORed with x: HMAC's
// inner (0x36) or outer (0x5c) pad. key must be at most a block long.
func appendPad[K ~string | ~[]byte](b []byte, key K, x byte) []byte {
	for i := 0; i < hmacBlock; i++ {
		k := byte(0)
		if i < len(key) {
			k = key[i]
		}
		b = append(b, k^x)
	}
	return b
}

// sigEqual compares a computed MAC with a hex signature as sent, in
// constant time for well-formed signatures.
func sigEqual[S ~string | ~[]byte](mac []byte, sigHex S) bool {
	var got [32]byte
	if len(sigHex) != 2*len(got) {
		return false
	}
	if !decodeHex(got[:], sigHex) {
		return false
	}
	return hmac.Equal(mac, got[:])
}

// decodeHex decodes the hex string s into dst, which must be len(s)/2 long.
func decodeHex[S ~string | ~[]byte](dst []byte, s S) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	bad := byte(0)
	for i := range dst {
		hi, lo := hexValue[s[2*i]], hexValue[s[2*i+1]]
		bad |= hi | lo
		dst[i] = hi<<4 | lo&0xf
	}
	return bad&notHex == 0
}

// notHex marks the bytes of hexValue that are no hex digit.
const notHex = 0x80

// hexValue maps a hex digit (either case) to its value, any other byte to
// notHex.
var hexValue = func() (t [256]byte) {
	for i := range t {
		t[i] = notHex
		if isHex(byte(i)) {
			t[i] = unhex(byte(i))
		}
	}
	return t
}()
