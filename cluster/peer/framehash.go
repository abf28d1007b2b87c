// Frame hashes: what a chunk frame's tag masks (see answer.go). A frame's
// hash depends on its payload and the cluster's secret only, not on the
// call, so a member that sends a chunk again sends the hashes it computed
// the first time (hashCache) and masks each with its answer's key: a
// chunk's bytes are hashed once per member, not once per call.
package peer

import (
	"crypto/aes"
	"crypto/cipher"
	"sync"

	"github.com/granary-dev/granary/store"
)

// frameHasher computes frame hashes: GHASH, under the hash key of AES-256
// with Kh = HMAC-SHA256(secret, "granary peer frame hash\n"), of a payload
// as GCM's additional data (its length block included). Go's GCM computes
// GMAC = GHASH xor AES_Kh(J0), J0 the nonce and a 32-bit 1; GMAC under
// the fixed hashNonce, xor that nonce's mask, is the hash. The hash is
// never sent as it is: only masked, each mask used once (answerKey).
// Safe for concurrent use.
type frameHasher struct {
	gcm  cipher.AEAD
	mask [TagSize]byte // AES_Kh(J0 of hashNonce)
}

// hashNonce is the GCM nonce frame hashes are computed under.
var hashNonce [12]byte

func newFrameHasher(k *secretMAC) *frameHasher {
	block, err := aes.NewCipher(k.sum(nil, []byte("granary peer frame hash\n")))
	if err != nil {
		panic(err) // a 32-byte key is always an AES key
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		panic(err) // AES has GCM's block size
	}
	h := &frameHasher{gcm: gcm}
	j0 := counterBlock(hashNonce)
	block.Encrypt(h.mask[:], j0[:])
	return h
}

// counterBlock is GCM's J0 for a 96-bit nonce: the nonce, then a 32-bit
// big-endian 1.
func counterBlock(nonce [12]byte) [16]byte {
	var b [16]byte
	copy(b[:], nonce[:])
	b[15] = 1
	return b
}

// sum returns the hash of p, computed in s (one goroutine's scratch).
func (h *frameHasher) sum(s *macScratch, p []byte) [TagSize]byte {
	s.nonce = hashNonce
	h.gcm.Seal(s.tag[:0], s.nonce[:], nil, p)
	return xorTag(s.tag, h.mask)
}

func xorTag(a, b [TagSize]byte) [TagSize]byte {
	for i := range a {
		a[i] ^= b[i]
	}
	return a
}

// hashCache keeps the frame hashes of the chunks this member sent whole
// (every frame from one offset to the chunk's end), by chunk version and
// offset, oldest out first, within max bytes (entryCost: the hashes,
// their names and the map's share). A chunk's version names its bytes
// (store.ChunkID): hashes kept for bytes a tier no longer holds as they
// were (bit rot, an origin that reused an ETag) fail the asker's check,
// which reads the chunk elsewhere; they never pass other bytes.
type hashCache struct {
	mu    sync.Mutex
	m     map[hashKey][][TagSize]byte
	order []hashKey // oldest first
	bytes int       // the entries' cost
	max   int
}

// hashKey names a chunk's frames from off: a version of a chunk of n
// bytes.
type hashKey struct {
	id     store.ChunkID
	off, n int64
}

// maxHashBytes bounds a member's cached hashes: 16 MiB, about 60,000
// chunks of 100 KiB, or 7,000 of 8 MiB (56 GiB).
const maxHashBytes = 16 << 20

// entryOverhead is what an entry costs beyond its hashes and names: the
// map's slot (the key's and the slice's headers) and its share of empty
// slots, the queue's copy of the key, the hashes' allocation.
const entryOverhead = 200

// entryCost is what keeping sums under k costs.
func entryCost(k hashKey, sums [][TagSize]byte) int {
	return TagSize*len(sums) + len(k.id.Bucket) + len(k.id.Key) + len(k.id.ETag) + entryOverhead
}

func newHashCache(max int) *hashCache {
	return &hashCache{m: make(map[hashKey][][TagSize]byte), max: max}
}

// get returns k's hashes, nil if none are kept. The slice is never
// changed.
func (c *hashCache) get(k hashKey) [][TagSize]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k]
}

// put keeps k's hashes (unless kept already), dropping the oldest kept
// to stay within max.
func (c *hashCache) put(k hashKey, sums [][TagSize]byte) {
	cost := entryCost(k, sums)
	if cost > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; ok {
		return
	}
	for c.bytes+cost > c.max {
		old := c.order[0]
		c.order = c.order[1:]
		c.bytes -= entryCost(old, c.m[old])
		delete(c.m, old)
	}
	c.m[k] = sums
	c.order = append(c.order, k)
	c.bytes += cost
}
