// Signing keys and signatures: the derived-key cache (Verify runs on every
// request, and deriving a key costs four HMACs) and the constant-time
// comparison of the signature a request carries.
package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"strings"
	"sync"

	"github.com/granary-dev/granary/api/s3err"
)

// maxCachedKeys bounds the key cache. A key is valid for one day and one
// region, so a deployment needs about (access keys x regions) entries; when
// the bound is reached the cache is emptied and refills itself.
const maxCachedKeys = 4096

// keyID names a derived key. The service is always s3.
type keyID struct{ secret, date, region string }

// keyCache maps keyID to its signing key.
type keyCache struct {
	mu sync.RWMutex // guards m
	m  map[keyID][32]byte
}

// cache returns v's key cache, creating it on first use. Two goroutines may
// race to create it; the loser's cache is dropped, which is harmless.
func (v *Verifier) cache() *keyCache {
	if c := v.keys.Load(); c != nil {
		return c
	}
	v.keys.CompareAndSwap(nil, &keyCache{m: make(map[keyID][32]byte)})
	return v.keys.Load()
}

// signingKey returns HMAC chain "AWS4"+secret -> date -> region -> s3 ->
// aws4_request, from the cache when it can.
func (c *keyCache) signingKey(secret, date, region string) [32]byte {
	id := keyID{secret, date, region}
	c.mu.RLock()
	k, ok := c.m[id]
	c.mu.RUnlock()
	if ok {
		return k
	}
	k = deriveKey(secret, date, region)
	// Clone the strings: date and region point into the request's header.
	id = keyID{secret, strings.Clone(date), strings.Clone(region)}
	c.mu.Lock()
	if len(c.m) >= maxCachedKeys {
		clear(c.m)
	}
	c.m[id] = k
	c.mu.Unlock()
	return k
}

// deriveKey computes a signing key without the cache.
func deriveKey(secret, date, region string) [32]byte {
	var k [32]byte
	h := hmac.New(sha256.New, []byte("AWS4"+secret))
	sum := macOnce(h, date)
	sum = macOnce(hmac.New(sha256.New, sum), region)
	sum = macOnce(hmac.New(sha256.New, sum), scopeService)
	sum = macOnce(hmac.New(sha256.New, sum), scopeTerminal)
	copy(k[:], sum)
	return k
}

func macOnce(h hash.Hash, msg string) []byte {
	h.Write([]byte(msg))
	return h.Sum(nil)
}

// checkSignature derives a's signing key, computes the signature of r and
// compares it with the one r carries, in constant time.
func (v *Verifier) checkSignature(r *Request, sc *scratch, a *authInfo) error {
	a.key = v.cache().signingKey(a.secret, a.date, a.region)
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
	a.seed = mac
	return nil
}

// hmacSHA256 is HMAC-SHA256 (RFC 2104) with a 32-byte key, computed with
// two SHA-256 sums over a caller-provided scratch buffer instead of
// crypto/hmac's five allocations: Verify runs on every request. msg and
// scratch must not overlap. It returns the (possibly grown) scratch.
// TestHMACMatchesCryptoHMAC holds it to crypto/hmac.
func hmacSHA256(key *[32]byte, msg, scratch []byte) ([]byte, [32]byte) {
	const block = 64
	pad := func(b []byte, x byte) []byte {
		for i := 0; i < block; i++ {
			k := byte(0)
			if i < len(key) {
				k = key[i]
			}
			b = append(b, k^x)
		}
		return b
	}
	b := pad(scratch[:0], 0x36)
	b = append(b, msg...)
	inner := sha256.Sum256(b)
	b = pad(b[:0], 0x5c)
	b = append(b, inner[:]...)
	return b, sha256.Sum256(b)
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
