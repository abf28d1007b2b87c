// Signature Version 2, S3's HMAC-SHA1 scheme: the "Authorization: AWS
// AK:signature" header and the AWSAccessKeyId/Signature/Expires query of a
// presigned URL. The string to sign is the verb, Content-MD5, Content-Type,
// a date (the Date header, or Expires), the x-amz-* headers and the
// canonical resource with its sub-resources. A SigV2 request resolves to
// the same access key, and so the same policy, as a SigV4 one; only its
// payload is never signed (Content-MD5 and checksum headers still hold).
package sigv4

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"net/http"
	"slices"
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
	t, err := v2RequestTime(r.Header)
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
	if !v2Matches(r, sc, secret, sig, v2HeaderDates(r.Header)) {
		return s3err.New(s3err.SignatureDoesNotMatch, "")
	}
	return v2Result(r, ak, secret, a)
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
	return v2Result(r, ak, secret, a)
}

// v2Result fills a for an authenticated SigV2 request. Its payload is not
// signed: a hex x-amz-content-sha256 is still verified, an unsigned
// aws-chunked body still decoded; signed chunks need SigV4's keys.
func v2Result(r *Request, ak, secret string, a *authInfo) error {
	payload := headerValue(r.Header, "X-Amz-Content-Sha256")
	switch mode, _, err := parseMode(payload); {
	case payload == "":
		payload = unsignedPayload
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
func v2RequestTime(h http.Header) (time.Time, error) {
	s := headerValue(h, "X-Amz-Date")
	if s == "" {
		s = headerValue(h, "Date")
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

// v2Date is one way a client may have filled the date of its string to
// sign: the slot after Content-Type, and whether x-amz-date is also among
// the canonical x-amz-* headers.
type v2Date struct {
	slot string
	amz  bool
}

// v2HeaderDates are the date forms a header-signed request may carry.
// Without x-amz-date the slot is the Date header. With it, AWS's text
// leaves the slot empty, AWS's own example puts x-amz-date there (and not
// among the headers), and botocore keeps the Date header there. Every
// form binds the request time into the signature, so all are accepted.
func v2HeaderDates(h http.Header) []v2Date {
	date := headerValue(h, "Date")
	amz := headerValue(h, "X-Amz-Date")
	if amz == "" {
		return []v2Date{{slot: date, amz: true}}
	}
	return []v2Date{{slot: "", amz: true}, {slot: amz, amz: false}, {slot: date, amz: true}}
}

// v2Form is one way of building a string to sign where clients differ.
type v2Form struct {
	date v2Date
	// keepEq keeps the '=' of a sub-resource sent with an empty value
	// ("uploads="), as botocore signs it; minio-go signs the bare name.
	keepEq bool
	// path is the request path as signed (after any virtual-host bucket).
	path string
}

// v2Forms lists the forms worth trying for r: the date forms, and the
// others only where r makes them differ. Each names the same request, so
// accepting any of them accepts nothing more.
func v2Forms(r *Request, sc *scratch, dates []v2Date) []v2Form {
	eqs := []bool{true}
	if emptySentWithEq(r.RawQuery, sc) {
		eqs = append(eqs, false)
	}
	var forms []v2Form
	for _, d := range dates {
		for _, e := range eqs {
			for _, p := range v2Paths(r) {
				forms = append(forms, v2Form{date: d, keepEq: e, path: p})
			}
		}
	}
	return forms
}

// v2Paths are the ways clients sign r's path: as sent; decoded and
// encoded again (unreserved bytes and '/' kept), as minio-go does; a
// path-style bucket ("/bucket") with its slash ("/bucket/"), as botocore
// does; and followed by the first query parameter as sent, which older
// botocore signs as part of the operation's path ("/bucket?list-type=2").
func v2Paths(r *Request) []string {
	paths := []string{r.RawPath}
	if c := string(appendCanonicalURI(nil, r.RawPath)); c != r.RawPath {
		paths = append(paths, c)
	}
	if r.VirtualBucket == "" && len(r.RawPath) > 1 && strings.IndexByte(r.RawPath[1:], '/') < 0 {
		paths = append(paths, r.RawPath+"/")
	}
	if first, _, _ := strings.Cut(r.RawQuery, "&"); first != "" {
		paths = append(paths, r.RawPath+"?"+first)
	}
	return paths
}

// v2Matches reports whether sig is the signature of r's string to sign
// in any of its forms, each compared in constant time.
func v2Matches(r *Request, sc *scratch, secret, sig string, dates []v2Date) bool {
	want, err := base64.StdEncoding.DecodeString(sig)
	if err != nil || len(want) != sha1.Size {
		return false
	}
	ok := false
	for _, f := range v2Forms(r, sc, dates) {
		sts := appendV2StringToSign(sc.buf[:0], r, sc, f)
		sc.buf = sts
		m := hmac.New(sha1.New, []byte(secret))
		m.Write(sts)
		ok = hmac.Equal(m.Sum(nil), want) || ok
	}
	return ok
}

// appendV2StringToSign appends r's SigV2 string to sign in form f.
func appendV2StringToSign(b []byte, r *Request, sc *scratch, f v2Form) []byte {
	b = append(b, r.Method...)
	b = append(b, '\n')
	b = append(b, strings.TrimSpace(headerValue(r.Header, "Content-Md5"))...)
	b = append(b, '\n')
	b = append(b, strings.TrimSpace(headerValue(r.Header, "Content-Type"))...)
	b = append(b, '\n')
	b = append(b, strings.TrimSpace(f.date.slot)...)
	b = append(b, '\n')
	b = appendV2AmzHeaders(b, r.Header, f.date.amz)
	if r.VirtualBucket != "" {
		b = append(b, '/')
		b = append(b, r.VirtualBucket...)
	}
	b = append(b, f.path...)
	return appendV2SubResources(b, r.RawQuery, sc, f.keepEq)
}

// appendV2AmzHeaders appends "name:v1,v2\n" for each x-amz-* header in
// name order, names lower-cased and values trimmed; x-amz-date only when
// withDate.
func appendV2AmzHeaders(b []byte, h http.Header, withDate bool) []byte {
	var names []string
	for k := range h {
		if len(k) > 6 && strings.EqualFold(k[:6], "x-amz-") && (withDate || !strings.EqualFold(k, "X-Amz-Date")) {
			names = append(names, k)
		}
	}
	slices.SortFunc(names, func(x, y string) int { return strings.Compare(strings.ToLower(x), strings.ToLower(y)) })
	for _, k := range names {
		b = append(b, strings.ToLower(k)...)
		b = append(b, ':')
		for i, v := range h[k] {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, strings.TrimSpace(v)...)
		}
		b = append(b, '\n')
	}
	return b
}

// appendV2SubResources appends "?k1=v1&k2" for the sub-resources of the
// query, sorted by name, values decoded.
func appendV2SubResources(b []byte, rawQuery string, sc *scratch, keepEq bool) []byte {
	var subs []queryPair
	for _, p := range sc.pairs {
		if v2SubResources[p.key] {
			subs = append(subs, p)
		}
	}
	slices.SortStableFunc(subs, func(x, y queryPair) int { return strings.Compare(x.key, y.key) })
	for i, p := range subs {
		b = append(b, "?&"[min(i, 1)])
		b = append(b, p.key...)
		if p.value != "" || (keepEq && sentWithEq(rawQuery, p.key)) {
			b = append(b, '=')
			b = append(b, p.value...)
		}
	}
	return b
}

// emptySentWithEq reports whether a sub-resource was sent as "name=",
// which clients sign in two ways.
func emptySentWithEq(rawQuery string, sc *scratch) bool {
	for _, p := range sc.pairs {
		if p.value == "" && v2SubResources[p.key] && sentWithEq(rawQuery, p.key) {
			return true
		}
	}
	return false
}

// sentWithEq reports whether the raw query holds key followed by '='.
// Sub-resource names need no escaping, so the raw form is the name.
func sentWithEq(rawQuery, key string) bool {
	for rawQuery != "" {
		var seg string
		seg, rawQuery, _ = strings.Cut(rawQuery, "&")
		if k, _, eq := strings.Cut(seg, "="); k == key {
			return eq
		}
	}
	return false
}
