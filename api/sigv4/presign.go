// Presigned-URL authentication: the X-Amz-* query parameters, their
// validity window and the payload hash a presigned request is signed with.
package sigv4

import (
	"strconv"
	"time"

	"github.com/granary-dev/granary/api/s3err"
)

const (
	unsignedPayload = "UNSIGNED-PAYLOAD"
	maxPresignLife  = 604800 // seconds: seven days, the AWS limit
	// credentialParamPrefix starts the message of an X-Amz-Credential error.
	credentialParamPrefix = "Error parsing the X-Amz-Credential parameter; "
)

// fromQuery fills a from the X-Amz-* query parameters of a presigned URL.
func (v *Verifier) fromQuery(r *Request, sc *scratch, a *authInfo) error {
	alg, _ := sc.get("X-Amz-Algorithm")
	credS, _ := sc.get("X-Amz-Credential")
	dateS, _ := sc.get("X-Amz-Date")
	expS, _ := sc.get("X-Amz-Expires")
	signed, _ := sc.get("X-Amz-SignedHeaders")
	sig, _ := sc.get("X-Amz-Signature")
	if alg != algorithm {
		return queryErr("X-Amz-Algorithm only supports \"" + algorithm + "\"")
	}
	if credS == "" || dateS == "" || expS == "" || signed == "" || sig == "" {
		return queryErr("Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.")
	}
	cred, msg := parseCredential(credS)
	if msg != "" {
		return queryErr(credentialParamPrefix + msg)
	}
	// AWS answers a presigned URL's wrong region with this code, not the
	// header form's AuthorizationHeaderMalformed (both are 400).
	if err := v.checkRegion(cred.region, s3err.AuthorizationQueryParamsError, credentialParamPrefix); err != nil {
		return err
	}
	expires, err := strconv.ParseInt(expS, 10, 64)
	if err != nil {
		return queryErr("X-Amz-Expires should be a number")
	}
	// Out of range, AWS answers 403, as for an expired URL.
	switch {
	case expires < 1:
		return s3err.New(s3err.AccessDenied, "X-Amz-Expires must be non-negative")
	case expires > maxPresignLife:
		return s3err.New(s3err.AccessDenied, "X-Amz-Expires must be less than a week (in seconds) that is 604800")
	}
	t, ok := parseAmzDate(dateS)
	if !ok {
		return queryErr("X-Amz-Date must be in the ISO8601 basic format yyyyMMdd'T'HHmmss'Z'")
	}
	if dateS[:8] != cred.date {
		return queryErr("Invalid credential date: it is not the same as X-Amz-Date")
	}
	if err := checkSignedHeaders(&sc.hdr, signed, s3err.AuthorizationQueryParamsError); err != nil {
		return err
	}
	secret, ok := v.Creds.Secret(cred.accessKey)
	if !ok {
		return s3err.New(s3err.InvalidAccessKeyID, "")
	}
	if err := v.checkWindow(t, expires); err != nil {
		return err
	}
	*a = authInfo{
		accessKey: cred.accessKey, secret: secret, scope: cred.scope,
		date: cred.date, region: cred.region, amzDate: dateS,
		signedHeaders: signed, signature: sig, payload: presignedPayload(sc),
		presigned: true,
	}
	return nil
}

// checkWindow refuses a presigned request before its date (beyond the skew)
// or after its expiry.
func (v *Verifier) checkWindow(t time.Time, expires int64) error {
	now := v.now()
	if t.Sub(now) > v.maxSkew() {
		return s3err.New(s3err.AccessDenied, "Request is not valid yet")
	}
	if now.After(t.Add(time.Duration(expires) * time.Second)) {
		return s3err.New(s3err.AccessDenied, "Request has expired")
	}
	return nil
}

// presignedPayload is the hashed payload of a presigned request: the
// x-amz-content-sha256 header, else the X-Amz-Content-Sha256 parameter,
// else UNSIGNED-PAYLOAD (what every SDK signs a presigned URL with).
func presignedPayload(sc *scratch) string {
	if p := sc.hdr.get(hContentSHA256); p != "" {
		return p
	}
	if p, ok := sc.get("X-Amz-Content-Sha256"); ok && p != "" {
		return p
	}
	return unsignedPayload
}

func queryErr(msg string) *s3err.Error {
	return s3err.New(s3err.AuthorizationQueryParamsError, msg)
}
