// The HMAC helpers, checked against crypto/hmac.
package sigv4

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"testing"
)

func TestHMACMatchesCryptoHMAC(t *testing.T) {
	var key [32]byte
	for n := 0; n < 300; n += 7 {
		copy(key[:], payloadOf(32 + n)[n:])
		msg := payloadOf(n)
		h := hmac.New(sha256.New, key[:])
		h.Write(msg)
		_, got := hmacSHA256(&key, msg, nil)
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
