// The signing-key cache. Deriving a key costs four HMACs and Verify runs
// on every request, so each key is derived once per access key, secret,
// date and region (the service is always s3) and kept while it can still
// verify something: a key is bound to its date, and no request older than
// a presigned URL's longest life names one.
package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"hash"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxCachedKeys bounds the key cache. A deployment needs about (access
// keys x regions x dates in use) entries, dates being today's and those
// of presigned URLs still valid; past the bound the cache is emptied and
// refills itself.
const maxCachedKeys = 4096

// keyLife is how long after its date a key may still verify a request: a
// presigned URL's longest life, a day for the date's own length, and a
// day of clock skew.
const keyLife = (maxPresignLife + 2*24*3600) * time.Second

// keyID names a derived key.
type keyID struct{ accessKey, date, region string }

// cachedKey is a derived key and the secret it was derived from. A hit
// needs the secret the credentials hold now, so a rotated secret misses
// (and its entry is replaced) and a removed key never gets here.
type cachedKey struct {
	secret string
	key    *macKey
}

// keyCache maps keyID to its key, as sync.Map does but without boxing
// keys: readers look in read, a map that never changes once published,
// without a lock; new keys go to dirty under mu and are published with
// read (copied) once dirty holds an eighth as many, so publishing costs
// O(1) per key however large the cache. New keys arrive once per key
// and day.
type keyCache struct {
	read  atomic.Pointer[map[keyID]cachedKey]
	mu    sync.Mutex // guards dirty and the publishing of read
	dirty map[keyID]cachedKey
}

// cache returns v's key cache, creating it on first use. Two goroutines may
// race to create it; the loser's cache is dropped, which is harmless.
func (v *Verifier) cache() *keyCache {
	if c := v.keys.Load(); c != nil {
		return c
	}
	v.keys.CompareAndSwap(nil, &keyCache{})
	return v.keys.Load()
}

// lookup returns the cached key of id if it was derived from secret: from
// read without a lock, else from dirty.
func (c *keyCache) lookup(id keyID, secret string) (*macKey, bool) {
	if m := c.read.Load(); m != nil {
		if e, ok := (*m)[id]; ok && e.secret == secret {
			return e.key, true
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.dirty[id]; ok && e.secret == secret {
		return e.key, true
	}
	return nil, false
}

// store caches key for id. Callers store only keys that verified a
// signature, so requests signed with a wrong secret cannot fill the cache.
func (c *keyCache) store(id keyID, secret string, key *macKey) {
	// The strings point into the request; the cache outlives it.
	id = keyID{strings.Clone(id.accessKey), strings.Clone(id.date), strings.Clone(id.region)}
	c.mu.Lock()
	defer c.mu.Unlock()
	read := c.read.Load()
	if read == nil {
		read = &map[keyID]cachedKey{}
	}
	if len(*read)+len(c.dirty) >= maxCachedKeys {
		read, c.dirty = &map[keyID]cachedKey{}, nil
	}
	if c.dirty == nil {
		c.dirty = make(map[keyID]cachedKey)
	}
	c.dirty[id] = cachedKey{secret: secret, key: key}
	_, replaced := (*read)[id] // a rotated secret: read holds the old one
	if replaced || len(c.dirty)*8 >= len(*read) {
		c.publish(*read, id.date)
	} else {
		c.read.Store(read)
	}
}

// publish stores as read the merge of old and dirty, less the keys too old
// to verify a request dated date (the newest), and empties dirty. c.mu
// must be held.
func (c *keyCache) publish(old map[keyID]cachedKey, date string) {
	expired := expiredBefore(date)
	next := make(map[keyID]cachedKey, len(old)+len(c.dirty))
	for _, m := range []map[keyID]cachedKey{old, c.dirty} {
		for k, e := range m {
			if k.date >= expired {
				next[k] = e
			}
		}
	}
	c.read.Store(&next)
	clear(c.dirty)
}

// expiredBefore returns the yyyymmdd date before which no key can verify
// a request dated date; "" if date does not parse.
func expiredBefore(date string) string {
	t, err := time.Parse("20060102", date)
	if err != nil {
		return ""
	}
	return t.Add(-keyLife).Format("20060102")
}

// signingKey returns a's signing key, from the cache when it can, and
// whether it came from there.
func (c *keyCache) signingKey(a *authInfo) (*macKey, bool) {
	if k, ok := c.lookup(keyID{a.accessKey, a.date, a.region}, a.secret); ok {
		return k, true
	}
	return newMACKey(deriveKey(a.secret, a.date, a.region)), false
}

// deriveKey computes the HMAC chain "AWS4"+secret -> date -> region -> s3
// -> aws4_request without the cache.
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
