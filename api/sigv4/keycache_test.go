// The signing-key cache: keys follow the credentials (a rotated or removed
// secret stops verifying at once), each date gets its own key, old dates
// leave, and the cache stays bounded under concurrent writers.
package sigv4

import (
	"crypto/hmac"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/granary-dev/granary/api/s3err"
)

// cachedKeyOf returns the key v caches for (testAK, date, testRegion)
// derived from testSK.
func cachedKeyOf(v *Verifier, date string) ([32]byte, bool) {
	k, ok := v.cache().lookup(keyID{testAK, date, testRegion}, testSK)
	if !ok {
		return [32]byte{}, false
	}
	return k.key, true
}

func TestKeyCacheFollowsCredentials(t *testing.T) {
	now := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	creds := StaticCredentials{testAK: testSK}
	v := &Verifier{Creds: creds, Now: func() time.Time { return now }}
	r := boto3Get(now)
	mustVerify(t, v, r)
	if k, ok := cachedKeyOf(v, "20261129"); !ok || !hmac.Equal(k[:], refKey(testSK, "20261129", testRegion)) {
		t.Fatal("the key that verified is not cached as the reference derives it")
	}
	mustVerify(t, v, r) // from the cache

	creds[testAK] = "rotated-secret-0123456789"
	_, err := v.Verify(r)
	wantCode(t, err, s3err.SignatureDoesNotMatch)

	delete(creds, testAK)
	_, err = v.Verify(r)
	wantCode(t, err, s3err.InvalidAccessKeyID)

	creds[testAK] = testSK
	mustVerify(t, v, r)
}

func TestKeyCacheDates(t *testing.T) {
	day1 := time.Date(2026, 11, 29, 23, 59, 0, 0, time.UTC)
	v := &Verifier{Creds: StaticCredentials{testAK: testSK}}
	at := func(now time.Time) {
		t.Helper()
		v.Now = func() time.Time { return now }
		mustVerify(t, v, boto3Get(now))
	}
	at(day1)
	at(day1.Add(2 * time.Minute)) // the next day: a new key beside the first
	k1, ok1 := cachedKeyOf(v, "20261129")
	k2, ok2 := cachedKeyOf(v, "20261130")
	if !ok1 || !ok2 || k1 == k2 {
		t.Fatalf("want two keys, one per date: %v %v", ok1, ok2)
	}
	if !hmac.Equal(k2[:], refKey(testSK, "20261130", testRegion)) {
		t.Fatal("the new date's key differs from the reference")
	}
	// A request dated past every presigned URL's life drops the old keys.
	at(day1.Add(10 * 24 * time.Hour))
	if _, ok := cachedKeyOf(v, "20261129"); ok {
		t.Fatal("a key too old to verify anything is still cached")
	}
	if _, ok := cachedKeyOf(v, "20261209"); !ok {
		t.Fatal("the newest key is not cached")
	}
}

func TestKeyCacheWrongSecretNotCached(t *testing.T) {
	now := time.Now()
	v := &Verifier{Creds: StaticCredentials{testAK: "not-the-signing-secret"}, Now: func() time.Time { return now }}
	_, err := v.Verify(boto3Get(now))
	wantCode(t, err, s3err.SignatureDoesNotMatch)
	if _, ok := v.cache().lookup(keyID{testAK, now.UTC().Format("20060102"), testRegion}, "not-the-signing-secret"); ok {
		t.Fatal("a key that verified nothing was cached")
	}
}

func TestKeyCacheBounded(t *testing.T) {
	c := &keyCache{}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < maxCachedKeys; i++ {
				c.store(keyID{testAK, "20261129", fmt.Sprintf("r%d-%d", g, i)}, testSK, newMACKey([32]byte{byte(i)}))
				c.lookup(keyID{testAK, "20261129", "r0-0"}, testSK)
			}
		}()
	}
	wg.Wait()
	if n := len(*c.read.Load()) + len(c.dirty); n == 0 || n > maxCachedKeys {
		t.Fatalf("cache holds %d keys", n)
	}
}
