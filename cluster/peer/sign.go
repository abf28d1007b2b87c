// Signing: every peer request carries the sender's node ID, a timestamp
// and an HMAC-SHA256 over both and the request line, keyed with the
// cluster secret. Bodies are not signed (they stream); the secret keeps
// nodes outside the cluster out.
package peer

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
)

// Headers of a signed request.
const (
	HeaderFrom = "X-Granary-Peer"
	HeaderTime = "X-Granary-Peer-Time"
	HeaderSig  = "X-Granary-Peer-Signature"
)

// MaxSkew is how far a request's timestamp may be from the receiver's
// clock.
const MaxSkew = 5 * time.Minute

// signed is what a request's signature covers.
type signed struct {
	method, path, query string // the path and raw query as sent
	from, stamp         string
}

func (s signed) signature(secret []byte) string {
	m := hmac.New(sha256.New, secret)
	for _, v := range []string{s.method, s.path, s.query, s.from, s.stamp} {
		m.Write([]byte(v))
		m.Write([]byte{'\n'})
	}
	return hex.EncodeToString(m.Sum(nil))
}

// stamp is the timestamp header's value for now.
func stamp(now time.Time) string { return strconv.FormatInt(now.Unix(), 10) }

// verify checks a request's signature sig over s at now; it returns the
// sending node's ID.
func verify(secret []byte, s signed, sig string, now time.Time) (string, error) {
	if len(secret) == 0 || s.from == "" || s.stamp == "" || sig == "" {
		return "", ErrUnauthenticated
	}
	sec, err := strconv.ParseInt(s.stamp, 10, 64)
	if err != nil {
		return "", ErrUnauthenticated
	}
	if d := now.Sub(time.Unix(sec, 0)); d > MaxSkew || d < -MaxSkew {
		return "", ErrUnauthenticated
	}
	if !hmac.Equal([]byte(s.signature(secret)), []byte(sig)) {
		return "", ErrUnauthenticated
	}
	return s.from, nil
}
