// Signatures: the string to sign, its HMAC without allocating, and the
// constant-time comparison with the signature a request carries.
package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"

	"github.com/granary-dev/granary/api/s3err"
)

// checkSignature derives a's signing key, computes the signature of r and
// compares it with the one r carries, in constant time.
func (v *Verifier) checkSignature(r *Request, sc *scratch, a *authInfo) error {
	c := v.cache()
	key, cached := c.signingKey(a)
	a.key = key
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
	var mac [32]byte
	sc.mac, mac = hmacSHA256(&a.key, b, sc.mac)
	if !sigEqual(mac[:], a.signature) {
		return s3err.New(s3err.SignatureDoesNotMatch, "")
	}
	if !cached {
		c.store(keyID{a.accessKey, a.date, a.region}, a.secret, key)
	}
	a.seed = mac
	return nil
}

// hmacSHA256 is HMAC-SHA256 (RFC 2104) with a 32-byte key, computed with
// two SHA-256 sums over a caller-provided scratch buffer instead of
// crypto/hmac's five allocations: Verify runs on every request. msg and
// scratch must not overlap. It returns the (possibly grown) scratch.
// TestHMACMatchesCryptoHMAC holds it to crypto/hmac.
func hmacSHA256(key *[32]byte, msg, scratch []byte) ([]byte, [32]byte) {
	b := appendPad(scratch[:0], key[:], 0x36)
	b = append(b, msg...)
	inner := sha256.Sum256(b)
	b = appendPad(b[:0], key[:], 0x5c)
	b = append(b, inner[:]...)
	return b, sha256.Sum256(b)
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
	for i := range dst {
		hi, lo := s[2*i], s[2*i+1]
		if !isHex(hi) || !isHex(lo) {
			return false
		}
		dst[i] = unhex(hi)<<4 | unhex(lo)
	}
	return true
}
