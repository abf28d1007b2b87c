// Why an origin call failed, in the words an operator acts on: refused,
// timeout, DNS, TLS, reset, a server error, or a 403 from the origin.
package guard

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/granary-dev/granary/store"
)

// The causes Classify names.
const (
	CauseRefused = "refused"      // nothing listens at the origin's address
	CauseTimeout = "timeout"      // no answer within the origin timeout
	CauseDNS     = "dns"          // the origin's name does not resolve
	CauseTLS     = "tls"          // the TLS handshake failed (certificate, protocol)
	CauseReset   = "reset"        // the connection broke mid-answer
	CauseServer  = "server error" // the origin answered 5xx (or SlowDown)
	CauseDenied  = "denied"       // the origin answered 403 (credentials, policy)
	CauseOther   = "error"
)

// Classify names the cause of an origin error. Origins keep the standard
// library's network errors in their chain (store/origin/s3); for those
// that keep only the text (HDFS), the text is read. A specific cause
// (DNS, TLS, refused) wins over a timeout that ended its retries.
func Classify(err error) string {
	if err == nil {
		return ""
	}
	msg := strings.ToLower(err.Error())
	switch {
	case errors.Is(err, store.ErrAccessDenied):
		return CauseDenied
	case isDNS(err, msg):
		return CauseDNS
	case isTLS(err, msg):
		return CauseTLS
	case errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(msg, "connection refused"):
		return CauseRefused
	case isTimeout(err, msg):
		return CauseTimeout
	case isReset(err, msg):
		return CauseReset
	case errors.Is(err, store.ErrUnavailable):
		return CauseServer
	}
	return CauseOther
}

func isDNS(err error, msg string) bool {
	var de *net.DNSError
	return errors.As(err, &de) || strings.Contains(msg, "no such host")
}

func isTimeout(err error, msg string) bool {
	var ne net.Error
	return errors.Is(err, errTimedOut) || (errors.As(err, &ne) && ne.Timeout()) ||
		strings.Contains(msg, "timeout") || strings.Contains(msg, "deadline exceeded")
}

func isTLS(err error, msg string) bool {
	var (
		cv *tls.CertificateVerificationError
		rh tls.RecordHeaderError
		ua x509.UnknownAuthorityError
		hn x509.HostnameError
		ci x509.CertificateInvalidError
		al tls.AlertError
	)
	return errors.As(err, &cv) || errors.As(err, &rh) || errors.As(err, &ua) || errors.As(err, &hn) ||
		errors.As(err, &ci) || errors.As(err, &al) ||
		strings.Contains(msg, "tls:") || strings.Contains(msg, "x509:") ||
		strings.Contains(msg, "http response to https client")
}

func isReset(err error, msg string) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		strings.Contains(msg, "connection reset") || strings.Contains(msg, "broken pipe") || strings.HasSuffix(msg, "eof")
}
