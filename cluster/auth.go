// Peer authentication: every peer request carries the sender's node ID, a
// timestamp and an HMAC-SHA256 over both and the request line, keyed with
// the cluster secret. Bodies are not signed (they stream); the secret
// keeps nodes outside the cluster out, TLS would be the answer to a
// network that can rewrite traffic.
package cluster

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// PeerPrefix starts the path of every peer request. It is under the admin
// prefix, which no bucket name can start with.
const PeerPrefix = "/_granary/peer/"

// Headers of a signed peer request.
const (
	HeaderFrom = "X-Granary-Peer"
	HeaderTime = "X-Granary-Peer-Time"
	HeaderSig  = "X-Granary-Peer-Signature"
)

// MaxSkew is how far a peer request's timestamp may be from the
// receiver's clock.
const MaxSkew = 5 * time.Minute

// ErrUnauthenticated means a peer request had no valid signature.
var ErrUnauthenticated = errors.New("cluster: peer request not signed with the cluster secret")

func signature(secret []byte, method, path, query, from, stamp string) string {
	m := hmac.New(sha256.New, secret)
	for _, s := range []string{method, path, query, from, stamp} {
		m.Write([]byte(s))
		m.Write([]byte{'\n'})
	}
	return hex.EncodeToString(m.Sum(nil))
}

// sign adds the peer headers to req, sent by node from at now.
func sign(req *http.Request, secret []byte, from string, now time.Time) {
	stamp := strconv.FormatInt(now.Unix(), 10)
	req.Header.Set(HeaderFrom, from)
	req.Header.Set(HeaderTime, stamp)
	req.Header.Set(HeaderSig, signature(secret, req.Method, req.URL.EscapedPath(), req.URL.RawQuery, from, stamp))
}

// Verify checks a peer request's signature: method, the path and raw query
// as sent, and the header getter get. It returns the sending node's ID.
func Verify(secret []byte, method, path, query string, get func(string) string, now time.Time) (string, error) {
	from, stamp, sig := get(HeaderFrom), get(HeaderTime), get(HeaderSig)
	if len(secret) == 0 || from == "" || stamp == "" || sig == "" {
		return "", ErrUnauthenticated
	}
	sec, err := strconv.ParseInt(stamp, 10, 64)
	if err != nil {
		return "", ErrUnauthenticated
	}
	if d := now.Sub(time.Unix(sec, 0)); d > MaxSkew || d < -MaxSkew {
		return "", ErrUnauthenticated
	}
	want := signature(secret, method, path, query, from, stamp)
	if !hmac.Equal([]byte(want), []byte(sig)) {
		return "", ErrUnauthenticated
	}
	return from, nil
}
