// Signing: every peer request carries its sender, its recipient, a
// timestamp, a nonce and an HMAC-SHA256 keyed with the cluster secret over
// those, the request line and every X-Granary-* header. A body is bound
// too, without being buffered: the sender hashes it as it streams and
// sends, in a trailer, an HMAC over the request's signature and that hash;
// the receiver hashes what it reads and checks the trailer before it
// hands over the body's last bytes (see bodyCheck). A nonce is accepted
// once (see replayGuard), so a captured request cannot be sent again.
package peer

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Headers of a signed request. Every header starting with HeaderPrefix
// but HeaderSig and TrailerBody is signed.
const (
	HeaderPrefix = "X-Granary-"
	HeaderFrom   = "X-Granary-Peer"
	HeaderTo     = "X-Granary-Peer-To"
	HeaderTime   = "X-Granary-Peer-Time"  // Unix milliseconds
	HeaderNonce  = "X-Granary-Peer-Nonce" // "boot.seq", see replayGuard
	HeaderSig    = "X-Granary-Peer-Signature"
	// TrailerBody, a trailer of a request with a body: the hex HMAC of
	// the request's signature and the SHA-256 of its body.
	TrailerBody = "X-Granary-Peer-Body"
)

// MaxSkew is how far a request's timestamp may be from the receiver's
// clock.
const MaxSkew = 5 * time.Minute

// secretMAC computes HMAC-SHA256 under the cluster secret, reusing its
// keyed states: a call is signed, checked and its answer keyed with it,
// and a state costs allocations and two block hashes to key afresh.
type secretMAC struct {
	secret []byte
	states sync.Pool // hash.Hash keyed with secret, each reset
	// frames hashes chunk frames under a key derived from secret.
	frames *frameHasher
}

func newSecretMAC(secret []byte) *secretMAC {
	k := &secretMAC{secret: secret}
	k.states.New = func() any { return hmac.New(sha256.New, secret) }
	k.frames = newFrameHasher(k)
	return k
}

// sum appends to dst the HMAC of the concatenation of parts.
func (k *secretMAC) sum(dst []byte, parts ...[]byte) []byte {
	m := k.states.Get().(hash.Hash)
	for _, p := range parts {
		m.Write(p)
	}
	dst = m.Sum(dst)
	m.Reset()
	k.states.Put(m)
	return dst
}

// signed is what a request's signature covers.
type signed struct {
	method, path, query string // the path and raw query as sent
	// headers are the X-Granary-* headers (sender, recipient, time and
	// nonce among them), each "lower-case-name:value", sorted.
	headers []string
}

// signedHeader reports whether header name is signed.
func signedHeader[T ~string | ~[]byte](name T) bool {
	return len(name) >= len(HeaderPrefix) && equalFoldASCII(name[:len(HeaderPrefix)], HeaderPrefix) &&
		!equalFoldASCII(name, HeaderSig) && !equalFoldASCII(name, TrailerBody)
}

// equalFoldASCII reports whether a and b are equal, ASCII letters
// compared without case (header names are ASCII).
func equalFoldASCII[T ~string | ~[]byte](a T, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(b); i++ {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// addHeader records header name: value in s if it is signed, as
// "lower-case-name:value" (one allocation, whichever type they come in).
func addHeader[T ~string | ~[]byte](s *signed, name, value T) {
	if !signedHeader(name) {
		return
	}
	var b strings.Builder
	b.Grow(len(name) + 1 + len(value))
	for i := 0; i < len(name); i++ {
		b.WriteByte(lowerASCII(name[i]))
	}
	b.WriteByte(':')
	for i := 0; i < len(value); i++ {
		b.WriteByte(value[i])
	}
	s.headers = append(s.headers, b.String())
}

// signature is the hex HMAC of the request line's parts and the signed
// headers, sorted, each followed by a newline. It sorts s.headers in
// place (their order means nothing) and hashes one buffer.
func (s signed) signature(k *secretMAC) string {
	slices.Sort(s.headers)
	n := len(s.method) + len(s.path) + len(s.query) + 3
	for _, h := range s.headers {
		n += len(h) + 1
	}
	b := make([]byte, 0, n)
	for _, v := range [...]string{s.method, s.path, s.query} {
		b = append(append(b, v...), '\n')
	}
	for _, h := range s.headers {
		b = append(append(b, h...), '\n')
	}
	return hex.EncodeToString(k.sum(nil, b))
}

// header returns the signed header name's value, "" if absent.
func (s signed) header(name string) string {
	for _, h := range s.headers {
		if len(h) > len(name) && h[len(name)] == ':' && equalFoldASCII(h[:len(name)], name) {
			return h[len(name)+1:]
		}
	}
	return ""
}

// stamp is the timestamp header's value for now.
func stamp(now time.Time) string { return strconv.FormatInt(now.UnixMilli(), 10) }

// verify checks a request's signature sig over s at now, as received by
// node self; it returns the sending node's ID. It does not consume the
// nonce (see replayGuard).
func verify(k *secretMAC, self string, s signed, sig string, now time.Time) (string, error) {
	from, to, st := s.header(HeaderFrom), s.header(HeaderTo), s.header(HeaderTime)
	if len(k.secret) == 0 || from == "" || to != self || st == "" || sig == "" {
		return "", ErrUnauthenticated
	}
	ms, err := strconv.ParseInt(st, 10, 64)
	if err != nil {
		return "", ErrUnauthenticated
	}
	if d := now.Sub(time.UnixMilli(ms)); d > MaxSkew || d < -MaxSkew {
		return "", ErrUnauthenticated
	}
	if !hmac.Equal([]byte(s.signature(k)), []byte(sig)) {
		return "", ErrUnauthenticated
	}
	return from, nil
}

// bodyMAC is the trailer's value for a body whose SHA-256 is sum, sent
// with the request signature sig.
func bodyMAC(k *secretMAC, sig string, sum []byte) string {
	return hex.EncodeToString(k.sum(nil, []byte(sig), []byte{'\n'}, sum))
}

// bodySigner is a request body that, at its end, sets the trailer that
// binds it to the request's signature.
type bodySigner struct {
	r       io.Reader
	h       hash.Hash
	key     *secretMAC
	sig     string
	trailer func(value string)
}

func (b *bodySigner) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.h.Write(p[:n])
	if err == io.EOF {
		b.trailer(bodyMAC(b.key, b.sig, b.h.Sum(nil)))
	}
	return n, err
}

// bodyCheck is a signed request's body of size bytes, as read by the
// receiver: it yields the body's bytes but the last ones only after it
// has seen the body end there and its trailer (read by trailer once the
// body ended) match what it hashed. A body that ends early fails with
// ErrIncompleteBody, one that runs long with ErrBadRequest, one whose
// trailer does not match with ErrUnauthenticated; then every Read fails.
type bodyCheck struct {
	r       io.Reader
	left    int64
	h       hash.Hash
	key     *secretMAC
	sig     string
	trailer func() string
	done    bool
	err     error
}

func newBodyCheck(r io.Reader, size int64, key *secretMAC, sig string, trailer func() string) *bodyCheck {
	return &bodyCheck{r: r, left: size, h: sha256.New(), key: key, sig: sig, trailer: trailer}
}

func (b *bodyCheck) Read(p []byte) (int, error) {
	switch {
	case b.err != nil:
		return 0, b.err
	case b.done:
		return 0, io.EOF
	case b.left == 0: // an empty body
		if b.err = b.finish(); b.err != nil {
			return 0, b.err
		}
		return 0, io.EOF
	}
	n, err := b.r.Read(p[:min(int64(len(p)), b.left)])
	b.h.Write(p[:n])
	b.left -= int64(n)
	switch {
	case b.left == 0:
		if b.err = b.finish(); b.err != nil {
			return 0, b.err // the last bytes are withheld
		}
		return n, nil
	case err == io.EOF:
		b.err = fmt.Errorf("%w: %d bytes missing", ErrIncompleteBody, b.left)
		return 0, b.err
	case err != nil:
		b.err = err
		return n, err
	}
	return n, nil
}

// finish checks that the body ends after its size and that its trailer
// matches.
func (b *bodyCheck) finish() error {
	var one [1]byte
	for {
		n, err := b.r.Read(one[:])
		if n > 0 {
			return fmt.Errorf("%w: the body is longer than declared", ErrBadRequest)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	want := bodyMAC(b.key, b.sig, b.h.Sum(nil))
	if !hmac.Equal([]byte(b.trailer()), []byte(want)) {
		return fmt.Errorf("%w: the body is not the one signed", ErrUnauthenticated)
	}
	b.done = true
	return nil
}
