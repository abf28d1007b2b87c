// Signature Version 2, S3's HMAC-SHA1 scheme: the "Authorization: AWS
// AK:signature" header and the AWSAccessKeyId/Signature/Expires query of a
// presigned URL. The string to sign is the verb, Content-MD5, Content-Type,
// a date (the Date header, or Expires), the x-amz-* headers and the
// canonical resource with its sub-resources. A SigV2 request resolves to
// the same access key, and so the same policy, as a SigV4 one; only its
// payload is never signed (Content-MD5 and checksum headers still hold).
package sigv4

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/granary-dev/granary/api/s3err"
)

// v2Prefix starts a SigV2 Authorization header ("AWS4-..." is SigV4).
const v2Prefix = "AWS "

// v2SubResources are the query parameters a SigV2 canonical resource
// keeps (AWS's list, as botocore and minio-go sign it); every other
// parameter is left out of the string to sign.
var v2SubResources = map[string]bool{
	"accelerate": true, "acl": true, "analytics": true, "cors": true, "defaultObjectAcl": true,
	"delete": true, "encryption": true, "inventory": true, "legal-hold": true, "lifecycle": true,
	"location": true, "logging": true, "metrics": true, "notification": true, "object-lock": true,
	"partNumber": true, "policy": true, "replication": true, "requestPayment": true, "restore": true,
	"retention": true, "select": true, "select-type": true, "storageClass": true, "tagging": true,
	"torrent": true, "uploadId": true, "uploads": true, "versionId": true, "versioning": true,
	"versions": true, "website": true,
	"response-cache-control": true, "response-content-disposition": true, "response-content-encoding": true,
	"response-content-language": true, "response-content-type": true, "response-expires": true,
}

// isV2Query reports whether the query carries SigV2 presigned parameters.
func isV2Query(sc *scratch) bool {
	return sc.has("AWSAccessKeyId") || sc.has("Signature")
}

// fromV2Header authenticates "Authorization: AWS AK:signature" and fills a.
func (v *Verifier) fromV2Header(r *Request, sc *scratch, auth string, a *authInfo) error {
	ak, sig, ok := strings.Cut(strings.TrimSpace(auth[len(v2Prefix):]), ":")
	if !ok || ak == "" || sig == "" {
		return s3err.New(s3err.InvalidArgument, "AWS authorization header is invalid.  Expected AwsAccessKeyId:signature")
	}
	t, err := v2RequestTime(&sc.hdr)
	if err != nil {
		return err
	}
	secret, ok := v.Creds.Secret(ak)
	if !ok {
		return s3err.New(s3err.InvalidAccessKeyID, "")
	}
	if d := v.now().Sub(t); d > v.maxSkew() || -d > v.maxSkew() {
		return s3err.New(s3err.RequestTimeTooSkewed, "")
	}
	var dates [3]v2Date
	if !v2Matches(r, sc, secret, sig, v2HeaderDates(dates[:0], &sc.hdr)) {
		return s3err.New(s3err.SignatureDoesNotMatch, "")
	}
	return v2Result(&sc.hdr, ak, secret, a)
}

// fromV2Query authenticates a SigV2 presigned URL and fills a.
func (v *Verifier) fromV2Query(r *Request, sc *scratch, a *authInfo) error {
	ak, _ := sc.get("AWSAccessKeyId")
	sig, _ := sc.get("Signature")
	expS, _ := sc.get("Expires")
	if ak == "" || sig == "" || expS == "" {
		return s3err.New(s3err.AccessDenied, "Query-string authentication requires the Signature, Expires and AWSAccessKeyId parameters")
	}
	expires, err := strconv.ParseInt(expS, 10, 64)
	if err != nil {
		return s3err.New(s3err.AccessDenied, "Invalid date (should be seconds since epoch): "+clip(expS))
	}
	secret, ok := v.Creds.Secret(ak)
	if !ok {
		return s3err.New(s3err.InvalidAccessKeyID, "")
	}
	now := v.now().Unix()
	if now > expires {
		return s3err.New(s3err.AccessDenied, "Request has expired")
	}
	// SigV4 caps a presigned URL's life at seven days; a SigV2 URL, which
	// names its end instead, is capped the same (with the clock skew
	// allowed, for a signer whose clock runs ahead of ours).
	if expires-now > maxPresignLife+int64(v.maxSkew()/time.Second) {
		return s3err.New(s3err.AccessDenied, "Expires must be less than a week (in seconds) from now: 604800")
	}
	// A '+' in a query is a space once decoded; a base64 signature sent
	// unescaped meant '+', and base64 never holds a space.
	sig = strings.ReplaceAll(sig, " ", "+")
	if !v2Matches(r, sc, secret, sig, []v2Date{{slot: expS, amz: true}}) {
		return s3err.New(s3err.SignatureDoesNotMatch, "")
	}
	return v2Result(&sc.hdr, ak, secret, a)
}

// v2Result fills a for an authenticated SigV2 request. Its payload is not
// signed: a hex x-amz-content-sha256 is still verified, an unsigned
// aws-chunked body still decoded; signed chunks need SigV4's keys.
func v2Result(h *headerIndex, ak, secret string, a *authInfo) error {
	payload := h.get(hContentSHA256)
	if payload == "" {
		payload = unsignedPayload
	}
	switch mode, _, err := parseMode(payload); {
	case err != nil:
		return err
	case mode == modeSignedChunks || mode == modeSignedChunksTrailer:
		return s3err.New(s3err.InvalidRequest, "Signed aws-chunked payloads need AWS4-HMAC-SHA256 (Signature Version 4).")
	}
	*a = authInfo{accessKey: ak, secret: secret, payload: payload}
	return nil
}

// v2RequestTime reads x-amz-date, else Date, in any of the HTTP date
// forms (and ISO 8601 basic for x-amz-date).
func v2RequestTime(h *headerIndex) (time.Time, error) {
	s := h.get(hAmzDate)
	if s == "" {
		s = h.get(hDate)
	}
	if t, ok := parseAmzDate(s); ok {
		return t, nil
	}
	if t, ok := parseHTTPDate(s); ok {
		return t, nil
	}
	return time.Time{}, s3err.New(s3err.AccessDenied, "AWS authentication requires a valid Date or x-amz-date header")
}

// httpDateLayouts are the date forms clients send: RFC 1123 with GMT
// (net/http, botocore), with a numeric zone ("-0000" from Python's
// email.utils, "+0000" in AWS's examples), RFC 850 and asctime.
var httpDateLayouts = []string{http.TimeFormat, time.RFC1123, time.RFC1123Z, time.RFC850, time.ANSIC}

// parseHTTPDate parses s in any of httpDateLayouts.
func parseHTTPDate(s string) (time.Time, bool) {
	for _, l := range httpDateLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}
