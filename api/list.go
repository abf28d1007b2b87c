// ListObjects (v1: GET /bucket) and ListObjectsV2 (GET /bucket?list-type=2):
// query validation, paging over the engine's After cursor, opaque
// continuation tokens and encoding-type=url.
package api

import (
	"context"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/store"
)

// maxListKeys is the most entries one listing page holds.
const maxListKeys = 1000

// listQuery holds the arguments both listing versions share.
type listQuery struct {
	prefix    string
	delimiter string
	maxKeys   int
	urlEncode bool
}

// queryValue returns a decoded query argument as a string of its own.
func queryValue(args *fasthttp.Args, name string) string {
	return string(args.Peek(name))
}

func parseListQuery(args *fasthttp.Args) (listQuery, error) {
	q := listQuery{
		prefix:    queryValue(args, "prefix"),
		delimiter: queryValue(args, "delimiter"),
		maxKeys:   maxListKeys,
	}
	if v := args.Peek("max-keys"); len(v) > 0 {
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 0 {
			return q, s3err.New(s3err.InvalidArgument, "max-keys must be an integer between 0 and 2147483647")
		}
		q.maxKeys = min(n, maxListKeys)
	}
	for _, v := range [...]string{q.prefix, q.delimiter} {
		if err := checkListArg(v); err != nil {
			return q, err
		}
	}
	var err error
	q.urlEncode, err = parseEncodingType(args)
	return q, err
}

// parseEncodingType reads encoding-type: absent, or "url".
func parseEncodingType(args *fasthttp.Args) (urlEncode bool, err error) {
	switch enc := args.Peek("encoding-type"); {
	case len(enc) == 0:
		return false, nil
	case strings.EqualFold(string(enc), "url"):
		return true, nil
	}
	return false, s3err.New(s3err.InvalidArgument, "Invalid Encoding Method specified in Request")
}

// checkListArg refuses a prefix, delimiter or cursor no key could match:
// not UTF-8, or holding NUL.
func checkListArg(v string) error {
	if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
		return s3err.New(s3err.InvalidArgument, "listing arguments must be UTF-8 without NUL")
	}
	return nil
}

// page fetches the page of q after the cursor. max-keys=0 asks for no
// entries: only the bucket's existence is checked.
func (s buckets) page(ctx context.Context, bucket string, q listQuery, after string) (store.ListPage, error) {
	if q.maxKeys == 0 {
		return store.ListPage{}, s.engine.HeadBucket(ctx, bucket)
	}
	return s.engine.List(ctx, bucket, store.ListOptions{
		Prefix: q.prefix, Delimiter: q.delimiter, After: after, MaxKeys: q.maxKeys,
	})
}

func (s buckets) listObjectsV1(c *fiber.Ctx, r *request) error {
	args := c.Request().URI().QueryArgs()
	q, err := parseListQuery(args)
	if err != nil {
		return err
	}
	marker := queryValue(args, "marker")
	if err := checkListArg(marker); err != nil {
		return err
	}
	page, err := s.page(r.ctx, r.bucket, q, marker)
	if err != nil {
		return err
	}
	owner := ownerOf(r)
	out := listBucketResult{
		Name: r.bucket, Prefix: q.enc(q.prefix), Marker: q.enc(marker),
		MaxKeys: q.maxKeys, Delimiter: q.enc(q.delimiter), IsTruncated: page.IsTruncated,
		Contents:       q.contents(page.Objects, &owner),
		CommonPrefixes: q.prefixes(page.CommonPrefixes),
	}
	// As in S3, NextMarker is only sent with a delimiter; without one the
	// client continues from the last key, which is the engine's cursor.
	if page.IsTruncated && q.delimiter != "" {
		out.NextMarker = q.enc(page.NextAfter)
	}
	if q.urlEncode {
		out.EncodingType = "url"
	}
	return writeXML(c, http.StatusOK, out)
}

func (s buckets) listObjectsV2(c *fiber.Ctx, r *request) error {
	args := c.Request().URI().QueryArgs()
	if lt := args.Peek("list-type"); string(lt) != "2" {
		return s3err.New(s3err.InvalidArgument, "list-type must be 2")
	}
	q, err := parseListQuery(args)
	if err != nil {
		return err
	}
	token := queryValue(args, "continuation-token")
	startAfter := queryValue(args, "start-after")
	if err := checkListArg(startAfter); err != nil {
		return err
	}
	after := startAfter
	if token != "" { // an empty token is no token, as S3 takes it
		if after, err = decodeToken(token); err != nil {
			return err
		}
	}
	page, err := s.page(r.ctx, r.bucket, q, after)
	if err != nil {
		return err
	}
	var owner *ownerXML
	if string(args.Peek("fetch-owner")) == "true" {
		o := ownerOf(r)
		owner = &o
	}
	out := listBucketV2Result{
		Name: r.bucket, Prefix: q.enc(q.prefix),
		StartAfter: q.enc(startAfter), KeyCount: len(page.Objects) + len(page.CommonPrefixes),
		MaxKeys: q.maxKeys, Delimiter: q.enc(q.delimiter), IsTruncated: page.IsTruncated,
		Contents:       q.contents(page.Objects, owner),
		CommonPrefixes: q.prefixes(page.CommonPrefixes),
	}
	if args.Has("continuation-token") { // echoed as given, even empty
		out.ContinuationToken = &token
	}
	if page.IsTruncated {
		out.NextContinuationToken = encodeToken(page.NextAfter)
	}
	if q.urlEncode {
		out.EncodingType = "url"
	}
	return writeXML(c, http.StatusOK, out)
}

func (q listQuery) contents(objs []store.ObjectInfo, owner *ownerXML) []objectXML {
	out := make([]objectXML, len(objs))
	for i, o := range objs {
		out[i] = objectXML{
			Key: q.enc(o.Key), LastModified: xmlTime(o.LastModified),
			ETag: `"` + o.ETag + `"`, Size: o.Size, Owner: owner, StorageClass: "STANDARD",
		}
	}
	return out
}

func (q listQuery) prefixes(ps []string) []prefixXML {
	out := make([]prefixXML, len(ps))
	for i, p := range ps {
		out[i] = prefixXML{Prefix: q.enc(p)}
	}
	return out
}

// enc applies encoding-type=url to a name when the client asked for it.
func (q listQuery) enc(s string) string {
	if !q.urlEncode {
		return s
	}
	return urlEncodeName(s)
}

// urlEncodeName percent-encodes every byte of s but the unreserved ones and
// '/', which is what clients undo for encoding-type=url (query unescaping,
// so a literal '+' must be encoded too).
func urlEncodeName(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isUnreserved(c) || c == '/' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

func isUnreserved(c byte) bool {
	return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') ||
		c == '-' || c == '_' || c == '.' || c == '~'
}

// tokenVersion starts every continuation token, so a token from anything
// else is rejected rather than misread.
const tokenVersion = 1

// encodeToken makes the opaque continuation token of a cursor.
func encodeToken(after string) string {
	return base64.RawURLEncoding.EncodeToString(append([]byte{tokenVersion}, after...))
}

// decodeToken returns the cursor of a token from encodeToken.
func decodeToken(tok string) (string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(raw) < 2 || raw[0] != tokenVersion || !utf8.Valid(raw[1:]) {
		return "", s3err.New(s3err.InvalidArgument, "The continuation token provided is incorrect")
	}
	return string(raw[1:]), nil
}
