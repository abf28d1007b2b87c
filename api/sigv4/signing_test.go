// Signing keys and the HMAC helper, checked against crypto/hmac.
package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"sync"
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

func TestSigningKeyCache(t *testing.T) {
	c := &keyCache{m: map[keyID][32]byte{}}
	want := refKey(testSK, "20130524", "us-east-1")
	if k := c.signingKey(testSK, "20130524", "us-east-1"); !hmac.Equal(k[:], want) {
		t.Fatal("derived key differs from the reference")
	}
	if k := c.signingKey(testSK, "20130524", "us-east-1"); !hmac.Equal(k[:], want) {
		t.Fatal("cached key differs from the reference")
	}
	// Bounded: filling past the limit empties and refills, under concurrency.
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < maxCachedKeys; i++ {
				c.signingKey(testSK, "20130524", fmt.Sprintf("r%d-%d", g, i))
			}
		}()
	}
	wg.Wait()
	c.mu.RLock()
	n := len(c.m)
	c.mu.RUnlock()
	if n == 0 || n > maxCachedKeys {
		t.Fatalf("cache holds %d keys", n)
	}
}
