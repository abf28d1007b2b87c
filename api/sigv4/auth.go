// Header authentication: parsing the Authorization header and its credential
// scope, reading the request date and checking the clock skew.
package sigv4

import (
	"strings"
	"time"

	"github.com/granary-dev/granary/api/s3err"
)

const (
	algorithm     = "AWS4-HMAC-SHA256"
	scopeService  = "s3"
	scopeTerminal = "aws4_request"
	amzDateLayout = "20060102T150405Z"
	emptySHA256   = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

// authInfo is what one authenticated request was signed with.
type authInfo struct {
	accessKey     string
	secret        string
	scope         string // date/region/s3/aws4_request
	date          string // yyyymmdd of the scope
	region        string
	amzDate       string // the request time as yyyymmddThhmmssZ, for the string to sign
	signedHeaders string // as sent: lower-case names joined by ';'
	signature     string // hex, as sent
	payload       string // the hashed-payload line of the canonical request
	presigned     bool
	key           [32]byte // derived signing key, set by checkSignature
	seed          [32]byte // the verified signature: the seed of a chunk chain
}

// authHeader is a parsed Authorization header.
type authHeader struct {
	Credential    string
	SignedHeaders string
	Signature     string
}

// parseAuthorization parses "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=...,
// Signature=...". Like AWS it accepts any mix of commas and spaces between
// the three fields, in any order. Errors are AuthorizationHeaderMalformed.
func parseAuthorization(h string) (authHeader, error) {
	var out authHeader
	h = strings.TrimLeft(h, " \t")
	rest, ok := strings.CutPrefix(h, algorithm)
	if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '\t') {
		return out, malformedHeader("the authorization header must start with " + algorithm)
	}
	for rest != "" {
		i := indexSeparator(rest)
		tok := rest
		if i >= 0 {
			tok, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		if tok == "" {
			continue
		}
		if err := out.setField(tok); err != nil {
			return out, err
		}
	}
	if out.Credential == "" || out.SignedHeaders == "" || out.Signature == "" {
		return out, malformedHeader("the authorization header needs Credential, SignedHeaders and Signature")
	}
	return out, nil
}

// indexSeparator returns the index of the first ',', ' ' or '\t' in s, -1
// if none: one vectorised scan per separator, each stopping at the last's
// find.
func indexSeparator(s string) int {
	end := len(s)
	for _, sep := range []byte{',', ' ', '\t'} {
		if i := strings.IndexByte(s[:end], sep); i >= 0 {
			end = i
		}
	}
	if end == len(s) {
		return -1
	}
	return end
}

// setField stores one "Name=value" token of the header.
func (a *authHeader) setField(tok string) error {
	name, val, ok := strings.Cut(tok, "=")
	if !ok || val == "" {
		return malformedHeader("malformed field " + quoteShort(tok))
	}
	var dst *string
	switch {
	case strings.EqualFold(name, "Credential"):
		dst = &a.Credential
	case strings.EqualFold(name, "SignedHeaders"):
		dst = &a.SignedHeaders
	case strings.EqualFold(name, "Signature"):
		dst = &a.Signature
	default:
		return malformedHeader("unknown field " + quoteShort(name))
	}
	if *dst != "" {
		return malformedHeader("repeated field " + quoteShort(name))
	}
	*dst = val
	return nil
}

// credential is a parsed "AK/yyyymmdd/region/s3/aws4_request".
type credential struct {
	accessKey, scope, date, region string
}

// parseCredential splits a credential from its end, so an access key may
// itself hold '/'. It returns a message on error; the caller picks the code.
func parseCredential(c string) (credential, string) {
	var out credential
	var idx [4]int
	end := len(c)
	for k := 3; k >= 0; k-- {
		i := strings.LastIndexByte(c[:end], '/')
		if i < 0 {
			return out, "the credential must be access-key/date/region/s3/aws4_request"
		}
		idx[k], end = i, i
	}
	out.accessKey = c[:idx[0]]
	out.scope = c[idx[0]+1:]
	out.date = c[idx[0]+1 : idx[1]]
	out.region = c[idx[1]+1 : idx[2]]
	service, term := c[idx[2]+1:idx[3]], c[idx[3]+1:]
	switch {
	case out.accessKey == "":
		return out, "the credential has no access key"
	case len(out.date) != 8 || !allDigits(out.date):
		return out, "the credential date must be yyyymmdd"
	case service != scopeService:
		return out, "Credential should be scoped to correct service: 's3'"
	case term != scopeTerminal:
		return out, "the credential must end with aws4_request"
	}
	return out, ""
}

// fromHeader fills a from the Authorization header.
func (v *Verifier) fromHeader(r *Request, sc *scratch, auth string, a *authInfo) error {
	if !strings.HasPrefix(strings.TrimLeft(auth, " \t"), algorithm) {
		return errUnsupportedAuth()
	}
	h, err := parseAuthorization(auth)
	if err != nil {
		return err
	}
	cred, msg := parseCredential(h.Credential)
	if msg != "" {
		return malformedHeader(msg)
	}
	if err := v.checkRegion(cred.region, s3err.AuthorizationHeaderMalformed, malformedPrefix); err != nil {
		return err
	}
	if err := checkSignedHeaders(&sc.hdr, h.SignedHeaders, s3err.AuthorizationHeaderMalformed); err != nil {
		return err
	}
	t, amzDate, err := requestTime(&sc.hdr)
	if err != nil {
		return err
	}
	if amzDate[:8] != cred.date {
		return malformedHeader("Invalid credential date: it is not the same as X-Amz-Date")
	}
	secret, ok := v.Creds.Secret(cred.accessKey)
	if !ok {
		return s3err.New(s3err.InvalidAccessKeyID, "")
	}
	if d := v.now().Sub(t); d > v.maxSkew() || -d > v.maxSkew() {
		return s3err.New(s3err.RequestTimeTooSkewed, "")
	}
	payload := sc.hdr.get(hContentSHA256)
	if payload == "" {
		if r.ContentLength != 0 {
			return s3err.New(s3err.InvalidRequest, "Missing required header for this request: x-amz-content-sha256")
		}
		payload = emptySHA256
	}
	*a = authInfo{
		accessKey: cred.accessKey, secret: secret, scope: cred.scope,
		date: cred.date, region: cred.region, amzDate: amzDate,
		signedHeaders: h.SignedHeaders, signature: h.Signature, payload: payload,
	}
	return nil
}

// requestTime reads X-Amz-Date, else Date. It returns the time and its
// yyyymmddThhmmssZ form for the string to sign.
func requestTime(h *headerIndex) (time.Time, string, error) {
	if s := h.get(hAmzDate); s != "" {
		t, ok := parseAmzDate(s)
		if !ok {
			return t, "", s3err.New(s3err.AccessDenied, "X-Amz-Date must be in the ISO8601 basic format yyyyMMdd'T'HHmmss'Z'.")
		}
		return t, s, nil
	}
	if s := h.get(hDate); s != "" {
		// botocore, given a Date header, signs with it alone, in
		// email.utils' "..., 25 Nov 2026 14:22:20 -0000" form.
		t, ok := parseHTTPDate(s)
		if !ok {
			return t, "", s3err.New(s3err.AccessDenied, "AWS authentication requires a valid Date or x-amz-date header.")
		}
		return t, t.Format(amzDateLayout), nil
	}
	return time.Time{}, "", s3err.New(s3err.AccessDenied, "AWS authentication requires a valid Date or x-amz-date header.")
}

// parseAmzDate parses yyyymmddThhmmssZ strictly, without allocating.
func parseAmzDate(s string) (time.Time, bool) {
	if len(s) != 16 || s[8] != 'T' || s[15] != 'Z' || !allDigits(s[:8]) || !allDigits(s[9:15]) {
		return time.Time{}, false
	}
	num := func(i, n int) int {
		v := 0
		for _, c := range []byte(s[i : i+n]) {
			v = v*10 + int(c-'0')
		}
		return v
	}
	y, mo, d := num(0, 4), num(4, 2), num(6, 2)
	h, mi, se := num(9, 2), num(11, 2), num(13, 2)
	// time.Date normalises out-of-range fields; refuse them instead.
	if mo < 1 || mo > 12 || d < 1 || d > daysIn(time.Month(mo), y) || h > 23 || mi > 59 || se > 59 {
		return time.Time{}, false
	}
	return time.Date(y, time.Month(mo), d, h, mi, se, 0, time.UTC), true
}

// daysIn returns the number of days of month m in year y (Gregorian).
func daysIn(m time.Month, y int) int {
	switch m {
	case time.February:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case time.April, time.June, time.September, time.November:
		return 30
	}
	return 31
}

// checkSignedHeaders requires a well-formed list that includes host, and
// refuses x-amz-* headers that are present but not signed (a party on the
// path could otherwise add metadata or checksums). x-amz-content-sha256 and
// x-amz-date are exempt: both are bound into the string to sign anyway.
func checkSignedHeaders(h *headerIndex, signed string, code s3err.Code) error {
	host := false
	for rest := signed; rest != ""; {
		var name string
		name, rest, _ = strings.Cut(rest, ";")
		if name == "" || !isLowerToken(name) {
			return s3err.New(code, "SignedHeaders must be lower-case header names separated by ';'")
		}
		host = host || name == "host"
	}
	if !host {
		return s3err.New(code, "SignedHeaders must include host")
	}
	lo, hi := h.prefixed("x-amz-")
	for p := lo; p < hi; p++ {
		k := h.name(p)
		if compareFold(k, knownNames[hContentSHA256]) == 0 || compareFold(k, knownNames[hAmzDate]) == 0 {
			continue
		}
		if !listHasFold(signed, k) {
			return s3err.New(s3err.AccessDenied, "There were headers present in the request which were not signed: "+strings.ToLower(k))
		}
	}
	return nil
}

// listHasFold reports whether the ';'-separated list holds name, ignoring case.
func listHasFold(list, name string) bool {
	for list != "" {
		var n string
		n, list, _ = strings.Cut(list, ";")
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

func isLowerToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || (c >= 'A' && c <= 'Z') || c == ':' {
			return false
		}
	}
	return true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// malformedPrefix starts the message of every AuthorizationHeaderMalformed.
const malformedPrefix = "The authorization header is malformed; "

func malformedHeader(msg string) *s3err.Error {
	return s3err.New(s3err.AuthorizationHeaderMalformed, malformedPrefix+msg)
}

// quoteShort quotes s for an error message, cut to a sane length.
func quoteShort(s string) string { return "\"" + clip(s) + "\"" }

// clip cuts a client's string to a sane length for an error message and
// makes it valid UTF-8.
func clip(s string) string {
	const max = 64
	if len(s) > max {
		s = s[:max] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}
