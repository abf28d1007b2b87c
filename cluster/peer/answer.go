// Sealed answers: a member's answer to a signed call is authenticated
// with a key that only the cluster's members can derive and that belongs
// to that one call, so what the asker acts on (a chunk's bytes, an
// object's info, a listing, a status, an identity, a refusal's code) is
// what the member it asked said, in answer to that call, unchanged on the
// way: TLS between members does the same for the wire, this does it in
// plain HTTP too, and always (one rule, cheaper than knowing when it may
// be skipped).
//
// The key. Each call's signature is unique (its nonce is accepted once),
// so the answer's key is derived from it: K = HMAC-SHA256(secret,
// "granary peer answer\n" + signature), used as an AES-256-GCM key for
// GMAC (GCM with no plaintext: a tag over additional data only). An
// answer captured for one call does not verify for another (another
// signature, another key), nor a member's answer to a call it did not
// admit (it seals none: see Handler.Serve). Under one key the GCM nonces
// are the tag's kind and index (answerNonce), each used once.
//
// The seal. HeaderAnswer carries a GMAC over the answer's status, its
// mode (a body, frames, or raw), the one header the protocol trusts
// (HeaderObject), and, for a body, the body's own GMAC. A body (JSON, a
// refusal, nothing) is read whole, bounded, and checked before it is
// decoded.
//
// Frames. A chunk's bytes (GET chunk, GET first) are streamed, and must
// be checked before any of them reaches a tier or a client, without
// holding the whole chunk back: the body is cut into frames of FrameSize
// payload bytes (the last one shorter), each followed by its tag. A tag
// is a Wegman-Carter MAC: the payload's hash (GHASH under a hash key of
// the cluster's, framehash.go) xor a mask used once, AES under the
// answer's key of the frame's nonce (its index, and whether it is the
// last) as GCM's J0: what GMAC under the answer's key would give if its
// hash key were the cluster's. The masks are pseudorandom and never
// repeat (one key per call, one nonce per frame), so a tag tells nothing
// of the hash key, and a forger must guess a GHASH difference. The hash
// depends on the payload alone, so a member keeps the hashes of a chunk
// it sent and masks them again for the next call (hashCache): a chunk's
// bytes are hashed once by the member that sends them, and once per call
// by the asker, which hashes what it received. The asker reads a frame
// into the caller's buffer, checks its tag, and only then returns its
// bytes (frameReader): a flipped byte fails the frame, a frame moved
// within or between answers fails its index or key, and a body cut short
// fails for want of its last frame. Nothing is copied for it on either
// side but the 16-byte tags: a member writes frames held in a tier
// straight to the connection, several frames and their tags per writev
// (frameWriter).
//
// GHASH (GMAC over AES-GCM) was chosen by measurement (8 MiB in 64 KiB frames,
// one core of the development machine, AES-NI, PCLMULQDQ and SHA-NI;
// BenchmarkAnswerMAC has the first two): GMAC about 4 GB/s, HMAC-SHA256
// about 0.9 GB/s, keyed BLAKE3 about 2 GB/s (and a new dependency),
// Poly1305 about 2 GB/s (and a one-time key per frame), keyed BLAKE2b
// about 0.3 GB/s. (BenchmarkAnswerMAC on a later day of that machine:
// a frame's tag from its bytes 9.5 GB/s, HMAC-SHA256 2.0 GB/s.)
//
// Over TLS. A member that reaches another over HTTPS (verifying its
// certificate) asks for a chunk raw (HeaderRaw, signed like every
// X-Granary-* header, so no one can ask it on a member's behalf): TLS
// already authenticates every byte and binds it to the connection, so
// frames would only tag them twice; the seal still binds the status and
// the info header to the call.
//
// Versions. A member of an older version seals nothing, or tags frames
// with GMAC under the answer's key; its answers are refused
// (ErrBadAnswer), so a mixed cluster serves from the origin and treats
// such members as not answering until every member is upgraded.
// An older member reading a chunk of a newer one refuses the answer too:
// its length is not the chunk's.
package peer

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"strconv"
)

// HeaderAnswer carries an answer's seal (hex).
const HeaderAnswer = "X-Granary-Peer-Answer"

// HeaderRaw, a request header, "1": the caller reaches the member over
// HTTPS and asks for a chunk's bytes as they are, without frames.
const HeaderRaw = "X-Granary-Peer-Raw"

// How an answer's body travels, as its seal states.
const (
	modeBody   = "body"      // read whole; its GMAC is in the seal
	modeFrames = "frames-wc" // a chunk in tagged frames
	modeRaw    = "raw"       // a chunk as it is, over TLS (HeaderRaw)
	// modeGMACFrames is what members of an earlier version seal their
	// frames as (each tagged with GMAC under the answer's key): refused,
	// with an error that says so.
	modeGMACFrames = "frames"
)

// FrameSize is the payload of each frame of a chunk's answer but the
// last. An asker releases a chunk's bytes a frame at a time, so a frame
// is also the least progress a stall watch sees.
const FrameSize = 64 << 10

// TagSize is the length of a frame's tag and of a seal.
const TagSize = 16

// Kinds of GMAC under one answer's key (the first byte of its nonce).
const (
	kindSeal      = 's'
	kindBody      = 'b'
	kindFrame     = 'f'
	kindLastFrame = 'l'
)

// answerKey is the key of one call's answer. It serves that call only,
// and one goroutine at a time (the one reading or writing the answer):
// its copies share one scratch for the MACs.
type answerKey struct {
	gcm   cipher.AEAD
	block cipher.Block // gcm's AES: frame tags' masks
	// hasher hashes frames (the cluster's, shared by every call).
	hasher *frameHasher
	// scratch holds a MAC's nonce and tag while the AEAD, an
	// interface, computes it (on the stack they would escape: an
	// allocation each).
	scratch *macScratch
}

type macScratch struct {
	nonce [12]byte
	j0    [16]byte
	tag   [TagSize]byte
}

// newAnswerKey derives the key of the answer to the call signed sig.
func newAnswerKey(k *secretMAC, sig string) answerKey {
	block, err := aes.NewCipher(k.sum(nil, []byte("granary peer answer\n"), []byte(sig)))
	if err != nil {
		panic(err) // a 32-byte key is always an AES key
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		panic(err) // AES has GCM's block size
	}
	return answerKey{gcm: gcm, block: block, hasher: k.frames, scratch: new(macScratch)}
}

// answerNonce is the nonce of the kind-th tag of index.
func answerNonce(kind byte, index uint64) [12]byte {
	var n [12]byte
	n[0] = kind
	binary.BigEndian.PutUint64(n[4:], index)
	return n
}

// mac is the GMAC of data as kind, index.
func (k answerKey) mac(kind byte, index uint64, data []byte) [TagSize]byte {
	s := k.scratch
	s.nonce = answerNonce(kind, index)
	k.gcm.Seal(s.tag[:0], s.nonce[:], nil, data)
	return s.tag
}

// frameTag is the tag of frame i (last: the answer's last frame).
func (k answerKey) frameTag(i uint64, last bool, payload []byte) [TagSize]byte {
	return k.maskHash(i, last, k.hasher.sum(k.scratch, payload))
}

// maskHash is the tag of frame i whose payload's hash is h: h xor
// AES_K(J0 of frame i's nonce), the mask GMAC under this key and that
// nonce would use, used once.
func (k answerKey) maskHash(i uint64, last bool, h [TagSize]byte) [TagSize]byte {
	kind := byte(kindFrame)
	if last {
		kind = kindLastFrame
	}
	s := k.scratch
	s.j0 = counterBlock(answerNonce(kind, i))
	k.block.Encrypt(s.tag[:], s.j0[:])
	return xorTag(s.tag, h)
}

// seal is HeaderAnswer's value for an answer with status, its body
// travelling as mode, and object (HeaderObject's value, "" if none);
// body is the body of modeBody.
func (k answerKey) seal(status int, mode, object string, body []byte) string {
	b := strconv.AppendInt(nil, int64(status), 10)
	b = append(append(append(b, '\n'), mode...), '\n')
	b = append(append(b, object...), '\n')
	if mode == modeBody {
		t := k.mac(kindBody, 0, body)
		b = append(b, t[:]...)
	}
	t := k.mac(kindSeal, 0, b)
	return hex.EncodeToString(t[:])
}

// sealMatches reports whether got is the seal of that answer.
func (k answerKey) sealMatches(got string, status int, mode, object string, body []byte) bool {
	want := k.seal(status, mode, object, body)
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// framedLen is the length of a framed body of n payload bytes.
func framedLen(n int64) int64 {
	return n + (n+FrameSize-1)/FrameSize*TagSize
}
