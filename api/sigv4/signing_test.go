// The HMAC helpers, checked against crypto/hmac.
package sigv4

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

func TestHMACMatchesCryptoHMAC(t *testing.T) {
	var key [32]byte
	sc := new(scratch) // one digest for every sum, as a pooled scratch is
	for n := 0; n < 300; n += 7 {
		copy(key[:], payloadOf(32 + n)[n:])
		msg := payloadOf(n)
		h := hmac.New(sha256.New, key[:])
		h.Write(msg)
		got := newMACKey(key).sum(sc, msg)
		if !hmac.Equal(got[:], h.Sum(nil)) {
			t.Fatalf("n=%d: mismatch", n)
		}
	}
}

func TestHMACSHA1MatchesCryptoHMAC(t *testing.T) {
	for n := 0; n < 300; n += 7 {
		key := string(payloadOf(n))
		msg := payloadOf(n + 3)
		h := hmac.New(sha1.New, []byte(key))
		h.Write(msg)
		_, got := hmacSHA1(key, msg, nil)
		if !hmac.Equal(got[:], h.Sum(nil)) {
			t.Fatalf("key of %d bytes: mismatch", n)
		}
	}
}

// decodeHex agrees with encoding/hex on every pair of bytes, both cases.
func TestDecodeHexMatchesEncodingHex(t *testing.T) {
	var s [2]byte
	for hi := 0; hi < 256; hi++ {
		for lo := 0; lo < 256; lo++ {
			s[0], s[1] = byte(hi), byte(lo)
			want, err := hex.DecodeString(string(s[:]))
			var got [1]byte
			ok := decodeHex(got[:], string(s[:]))
			if ok != (err == nil) || (ok && got[0] != want[0]) {
				t.Fatalf("%q: got %x, %v; encoding/hex %x, %v", s, got, ok, want, err)
			}
		}
	}
}
