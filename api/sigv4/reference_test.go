// An independent, deliberately plain SigV4 signer (net/url, sort, fmt) used
// as a second oracle where minio-go cannot produce the request a test needs.
package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"sort"
	"strings"
)

func refHMAC(key []byte, msg string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

func refKey(secret, date, region string) []byte {
	k := refHMAC([]byte("AWS4"+secret), date)
	k = refHMAC(k, region)
	k = refHMAC(k, "s3")
	return refHMAC(k, "aws4_request")
}

func refEncode(s string, keepSlash bool) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', strings.IndexByte("-_.~", c) >= 0:
			b.WriteByte(c)
		case c == '/' && keepSlash:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// referenceSignature signs r as a describes it, with testSK.
func referenceSignature(r *Request, a *authInfo) string {
	path, err := url.PathUnescape(r.RawPath)
	if err != nil {
		panic(err)
	}
	q, err := url.ParseQuery(r.RawQuery)
	if err != nil {
		panic(err)
	}
	var params []string
	for k, vs := range q {
		if a.presigned && k == "X-Amz-Signature" {
			continue
		}
		for _, v := range vs {
			params = append(params, refEncode(k, false)+"="+refEncode(v, false))
		}
	}
	sort.Strings(params)
	var hdrs strings.Builder
	for _, name := range strings.Split(a.signedHeaders, ";") {
		vals := r.Header.Values(name)
		if name == "host" && len(vals) == 0 {
			vals = []string{r.Host}
		}
		for i := range vals {
			vals[i] = strings.Join(strings.Fields(vals[i]), " ")
		}
		hdrs.WriteString(name + ":" + strings.Join(vals, ",") + "\n")
	}
	cr := strings.Join([]string{r.Method, refEncode(path, true), strings.Join(params, "&"),
		hdrs.String(), a.signedHeaders, a.payload}, "\n")
	crSum := sha256.Sum256([]byte(cr))
	sts := "AWS4-HMAC-SHA256\n" + a.amzDate + "\n" + a.scope + "\n" + hex.EncodeToString(crSum[:])
	return hex.EncodeToString(refHMAC(refKey(testSK, a.date, a.region), sts))
}

// refChunkSig signs one aws-chunked chunk chained from prev.
func refChunkSig(key []byte, amzDate, scope, prev string, data []byte) string {
	sum := sha256.Sum256(data)
	sts := "AWS4-HMAC-SHA256-PAYLOAD\n" + amzDate + "\n" + scope + "\n" + prev + "\n" + emptySHA256 + "\n" + hex.EncodeToString(sum[:])
	return hex.EncodeToString(refHMAC(key, sts))
}

// refTrailerSig signs a trailer section chained from prev.
func refTrailerSig(key []byte, amzDate, scope, prev, trailers string) string {
	sum := sha256.Sum256([]byte(trailers))
	sts := "AWS4-HMAC-SHA256-TRAILER\n" + amzDate + "\n" + scope + "\n" + prev + "\n" + hex.EncodeToString(sum[:])
	return hex.EncodeToString(refHMAC(key, sts))
}
