// Listing of an S3 origin: one ListObjectsV2 page per call (more only when
// the After rule filtered entries out), translated to the store's page.
// Each page is one request sent with the caller's context (rawDo), so a
// caller's bound ends it: minio-go's ListObjectsV2 takes no context, and
// through its retries a hung origin held a listing for three
// response-header timeouts, whatever bound the guard set.
package s3

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/granary-dev/granary/store"
)

const defaultMaxKeys = 1000

// pastPrefix appended to a common prefix gives a start-after position
// beyond every key under it: U+10FFFF is the greatest code point, and keys
// are UTF-8, so a key that has the prefix and sorts after the position
// must continue with U+10FFFF and so still lies under the prefix.
const pastPrefix = "\U0010FFFF"

// List returns one page of bucket's keys.
//
// The page holds only entries after opts.After, and never a common prefix
// equal to it (nor a key under it). Servers do not all agree: S3 rolls keys
// into prefixes before StartAfter applies, and MinIO repeats a common
// prefix at the position a continuation token holds (with any delimiter
// but "/"). So entries are filtered here, and each further server page
// starts after a position this code computes, never from a token.
//
// Each request runs under ctx; it is sent once (no retries of its own:
// the caller's bound holds, and a client retries a 503 itself).
func (o *Origin) List(ctx context.Context, bucket string, opts store.ListOptions) (store.ListPage, error) {
	if err := checkBucket(bucket); err != nil {
		return store.ListPage{}, err
	}
	if opts.MaxKeys <= 0 {
		opts.MaxKeys = defaultMaxKeys
	}
	var page store.ListPage
	count, startAfter := 0, opts.After
	if isCommonPrefix(opts.After, opts) {
		startAfter = opts.After + pastPrefix
	}
	for {
		res, err := o.listV2(ctx, bucket, opts.Prefix, startAfter, opts.Delimiter, opts.MaxKeys-count)
		if err != nil {
			return store.ListPage{}, wrap(ctx, "list", bucket, "", err)
		}
		last, lastIsCP := "", false
		for _, obj := range res.Contents {
			last = max(last, obj.Key)
			if obj.Key > opts.After {
				page.Objects = append(page.Objects, store.ObjectInfo{
					Key: obj.Key, Size: obj.Size, ETag: strings.Trim(obj.ETag, `"`),
					LastModified: obj.LastModified.UTC(),
				})
				count++
			}
		}
		for _, cp := range res.CommonPrefixes {
			if cp.Prefix > last {
				last, lastIsCP = cp.Prefix, true
			}
			// Prefixes arrive sorted; a repeat can only equal the last one.
			n := len(page.CommonPrefixes)
			if cp.Prefix > opts.After && (n == 0 || page.CommonPrefixes[n-1] != cp.Prefix) {
				page.CommonPrefixes = append(page.CommonPrefixes, cp.Prefix)
				count++
			}
		}
		if !res.IsTruncated || last == "" {
			return page, nil
		}
		if count >= opts.MaxKeys {
			page.IsTruncated = true
			page.NextAfter = lastEntry(page)
			return page, nil
		}
		if startAfter = last; lastIsCP {
			startAfter = last + pastPrefix
		}
	}
}

// listResult is what List reads of a ListObjectsV2 answer.
type listResult struct {
	EncodingType string
	IsTruncated  bool
	Contents     []struct {
		Key          string
		ETag         string
		Size         int64
		LastModified time.Time
	}
	CommonPrefixes []struct{ Prefix string }
}

// listV2 sends one ListObjectsV2 request, as minio-go would (names
// url-encoded on the wire, decoded here), under ctx.
func (o *Origin) listV2(ctx context.Context, bucket, prefix, startAfter, delimiter string, maxKeys int) (listResult, error) {
	q := url.Values{"list-type": {"2"}, "encoding-type": {"url"}, "prefix": {prefix}, "delimiter": {delimiter},
		"max-keys": {strconv.Itoa(maxKeys)}}
	if startAfter != "" {
		q.Set("start-after", startAfter)
	}
	var res listResult
	resp, err := o.rawDo(ctx, http.MethodGet, bucket, "", q, nil, nil, 0)
	if err == nil {
		err = readAnswer(resp, &res)
	}
	if err != nil || res.EncodingType != "url" {
		return res, err
	}
	for i := range res.Contents {
		if res.Contents[i].Key, err = url.QueryUnescape(res.Contents[i].Key); err != nil {
			return res, err
		}
	}
	for i := range res.CommonPrefixes {
		if res.CommonPrefixes[i].Prefix, err = url.QueryUnescape(res.CommonPrefixes[i].Prefix); err != nil {
			return res, err
		}
	}
	return res, nil
}

// isCommonPrefix reports whether s is a common prefix of the listing opts
// describe: the listing's prefix, then up to and including the first
// delimiter.
func isCommonPrefix(s string, opts store.ListOptions) bool {
	d := opts.Delimiter
	if d == "" || !strings.HasPrefix(s, opts.Prefix) || !strings.HasSuffix(s, d) {
		return false
	}
	return strings.Index(s[len(opts.Prefix):], d) == len(s)-len(opts.Prefix)-len(d)
}

// lastEntry returns the greatest key or common prefix of a page.
func lastEntry(p store.ListPage) string {
	last := ""
	if n := len(p.Objects); n > 0 {
		last = p.Objects[n-1].Key
	}
	if n := len(p.CommonPrefixes); n > 0 && p.CommonPrefixes[n-1] > last {
		last = p.CommonPrefixes[n-1]
	}
	return last
}
