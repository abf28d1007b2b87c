// Tests of frame hashes: the hash is GHASH as NIST SP 800-38D defines it
// (checked against a plain implementation here, not Go's GCM), a tag is
// that hash masked as GMAC would mask it under the answer's key, a member
// sends a chunk's kept hashes again (and bytes that no longer match them
// fail the asker's check, never pass), the cache stays within its bound,
// and an earlier version's frames are refused by name.
package peer

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/granary-dev/granary/store"
)

// gfMul multiplies x and y in GCM's GF(2^128) (SP 800-38D, algorithm 1:
// bit 0 is the most significant bit of byte 0).
func gfMul(x, y [16]byte) [16]byte {
	var z [16]byte
	v := y
	for i := 0; i < 128; i++ {
		if x[i/8]>>(7-i%8)&1 == 1 {
			for j := range z {
				z[j] ^= v[j]
			}
		}
		lsb := v[15] & 1
		for j := 15; j > 0; j-- {
			v[j] = v[j]>>1 | v[j-1]<<7
		}
		v[0] >>= 1
		if lsb == 1 {
			v[0] ^= 0xe1
		}
	}
	return z
}

// refGHASH is GHASH_H of a as additional data and no ciphertext: a
// zero-padded to whole blocks, then the lengths block.
func refGHASH(h [16]byte, a []byte) [16]byte {
	var y [16]byte
	block := func(b []byte) {
		var x [16]byte
		copy(x[:], b)
		for j := range y {
			y[j] ^= x[j]
		}
		y = gfMul(y, h)
	}
	for off := 0; off < len(a); off += 16 {
		block(a[off:min(off+16, len(a))])
	}
	var lens [16]byte
	binary.BigEndian.PutUint64(lens[:8], uint64(len(a))*8)
	block(lens[:])
	return y
}

// aesBlock is AES under key applied to in.
func aesBlock(t *testing.T, key []byte, in [16]byte) [16]byte {
	t.Helper()
	b, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	var out [16]byte
	b.Encrypt(out[:], in[:])
	return out
}

func hmacOf(secret []byte, parts ...string) []byte {
	m := hmac.New(sha256.New, secret)
	for _, p := range parts {
		m.Write([]byte(p))
	}
	return m.Sum(nil)
}

func TestFrameTagIsMaskedGHASH(t *testing.T) {
	secret := []byte(testSecret)
	k := newAnswerKey(newSecretMAC(secret), "a-signature")
	hashKey := aesBlock(t, hmacOf(secret, "granary peer frame hash\n"), [16]byte{})
	callKey := hmacOf(secret, "granary peer answer\n", "a-signature")
	for _, n := range []int{1, 15, 16, 17, 1000, FrameSize} {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(i*31 + n)
		}
		want := refGHASH(hashKey, p)
		if got := k.hasher.sum(k.scratch, p); got != want {
			t.Fatalf("%d bytes: hash %x, want GHASH %x", n, got, want)
		}
		for _, last := range []bool{false, true} {
			kind := byte(kindFrame)
			if last {
				kind = kindLastFrame
			}
			mask := aesBlock(t, callKey, counterBlock(answerNonce(kind, 7)))
			if got := k.frameTag(7, last, p); got != xorTag(want, mask) {
				t.Fatalf("%d bytes, last %v: tag %x, want GHASH xor the call's mask %x", n, last, got, xorTag(want, mask))
			}
		}
	}
}

// TestKeptHashesSentAgain: a member keeps the hashes of a chunk it sent
// and sends them again with that chunk; bytes that changed under the
// same version since then fail the asker's check, and none is returned.
func TestKeptHashesSentAgain(t *testing.T) {
	r := startRig(t, false)
	r.be.chunk = 4 * FrameSize
	data := make([]byte, 2*FrameSize+100)
	for i := range data {
		data[i] = byte(i*13 + i>>11)
	}
	id := store.ChunkID{Bucket: "b", Key: "k", ETag: "e"}
	r.be.chunks[id] = data
	read := func(off int64) ([]byte, error) {
		rc, err := r.client.GetChunk(context.Background(), r.to, ChunkRequest{ID: id, Len: int64(len(data)), Chunk: r.be.chunk, Off: off})
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return readFrames(rc)
	}
	for range 2 {
		if got, err := read(0); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read: %d bytes, %v", len(got), err)
		}
	}
	changed := bytes.Clone(data)
	changed[FrameSize+5] ^= 1
	r.be.mu.Lock()
	r.be.chunks[id] = changed
	r.be.mu.Unlock()
	got, err := read(0)
	if !errors.Is(err, ErrBadAnswer) || len(got) > FrameSize || !bytes.Equal(got, data[:len(got)]) {
		t.Fatalf("a changed frame sent with its kept hash: %d bytes, %v; want the first frame at most, then ErrBadAnswer", len(got), err)
	}
	// From another offset the frames differ: their hashes are their own.
	if got, err := read(1); err != nil || !bytes.Equal(got, changed[1:]) {
		t.Fatalf("from offset 1: %d bytes, %v", len(got), err)
	}
}

func TestHashCacheBound(t *testing.T) {
	name := func(i int) hashKey { return hashKey{id: store.ChunkID{Key: "k", Index: int64(i)}, n: 1} }
	three := make([][TagSize]byte, 3)
	c := newHashCache(3*entryCost(name(0), three) + 10) // room for three entries of three hashes
	for i := range 6 {
		c.put(name(i), three)
	}
	if c.bytes > c.max || len(c.m) != 3 || len(c.order) != 3 {
		t.Fatalf("%d bytes in %d entries (order %d), want at most %d in the 3 newest", c.bytes, len(c.m), len(c.order), c.max)
	}
	for i := range 6 {
		if kept := c.get(name(i)) != nil; kept != (i >= 3) {
			t.Errorf("entry %d kept %v", i, kept)
		}
	}
	c.put(name(9), make([][TagSize]byte, c.max/TagSize)) // larger than the whole cache
	if c.get(name(9)) != nil || c.bytes > c.max || len(c.m) != 3 {
		t.Fatalf("an entry over the bound was kept: %d bytes in %d entries", c.bytes, len(c.m))
	}
}

// TestEarlierVersionFramesNamed: an answer sealed as a member of the
// version before frame hashes seals its frames is refused with an error
// that names the cause, not as an answer changed on the way.
func TestEarlierVersionFramesNamed(t *testing.T) {
	r, ed := editRig(t)
	id := store.ChunkID{Bucket: "b", Key: "k", ETag: "e"}
	r.be.chunks[id] = bytes.Repeat([]byte("y"), 1000)
	ed.set(func(req *http.Request, resp *http.Response, b []byte) []byte {
		k := newAnswerKey(newSecretMAC([]byte(testSecret)), req.Header.Get(HeaderSig))
		resp.Header.Set(HeaderAnswer, k.seal(resp.StatusCode, modeGMACFrames, resp.Header.Get(HeaderObject), nil))
		return b
	})
	_, err := r.client.GetChunk(context.Background(), r.to, ChunkRequest{ID: id, Len: 1000, Chunk: 1 << 10})
	if !errors.Is(err, ErrBadAnswer) || !strings.Contains(err.Error(), "earlier version") {
		t.Fatalf("an earlier version's chunk answer: %v, want ErrBadAnswer naming the earlier version", err)
	}
}
