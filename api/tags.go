// Tags as S3 takes them: the x-amz-tagging header (URL-encoded query form)
// of PutObject, CopyObject and CreateMultipartUpload, the Tagging XML
// document, and S3's limits (10 tags on an object, 50 on a bucket, keys up
// to 128 characters and values up to 256, no repeated key, no "aws:"
// prefix, letters, digits, spaces and + - = . _ : / @ only).
package api

import (
	"encoding/xml"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/granary-dev/granary/api/s3err"
)

const (
	maxObjectTags = 10
	maxBucketTags = 50
	maxTagKey     = 128
	maxTagValue   = 256
)

// taggingXML is the Tagging document of Get/Put*Tagging.
type taggingXML struct {
	XMLName xml.Name `xml:"Tagging"`
	Xmlns   string   `xml:"xmlns,attr,omitempty"`
	TagSet  struct {
		Tags []tagXML `xml:"Tag"`
	} `xml:"TagSet"`
}

type tagXML struct {
	Key   string `xml:"Key"`
	Value string `xml:"Value"`
}

// newTaggingXML renders tags sorted by key.
func newTaggingXML(tags map[string]string) taggingXML {
	out := taggingXML{Xmlns: s3Namespace}
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out.TagSet.Tags = append(out.TagSet.Tags, tagXML{Key: k, Value: tags[k]})
	}
	return out
}

// tagsOf checks a Tagging document's tags (at most max) and returns them.
func (t taggingXML) tagsOf(max int) (map[string]string, error) {
	tags := make(map[string]string, len(t.TagSet.Tags))
	for _, tg := range t.TagSet.Tags {
		if _, dup := tags[tg.Key]; dup {
			return nil, s3err.New(s3err.InvalidTag, "Cannot provide multiple Tags with the same key")
		}
		tags[tg.Key] = tg.Value
	}
	return tags, checkTags(tags, max)
}

// parseTaggingHeader reads x-amz-tagging: "k1=v1&k2=v2", URL-encoded.
// Absent or empty: no tags (nil).
func parseTaggingHeader(v string) (map[string]string, error) {
	if v == "" {
		return nil, nil
	}
	bad := s3err.New(s3err.InvalidArgument, "The header 'x-amz-tagging' shall be encoded as UTF-8 then URLEncoded URL query parameters without tag name duplicates.")
	tags := make(map[string]string)
	for seg := range strings.SplitSeq(v, "&") {
		k, val, _ := strings.Cut(seg, "=")
		k, err1 := url.QueryUnescape(k)
		val, err2 := url.QueryUnescape(val)
		if err1 != nil || err2 != nil {
			return nil, bad
		}
		if _, dup := tags[k]; dup {
			return nil, bad
		}
		tags[k] = val
	}
	return tags, checkTags(tags, maxObjectTags)
}

// checkTags applies S3's limits.
func checkTags(tags map[string]string, max int) error {
	if len(tags) > max {
		what := "Object"
		if max == maxBucketTags {
			what = "Bucket"
		}
		return s3err.New(s3err.InvalidTag, what+" tags cannot be greater than "+strconv.Itoa(max))
	}
	for k, v := range tags {
		switch {
		case k == "" || !validTagText(k):
			return s3err.New(s3err.InvalidTag, "The TagKey you have provided is invalid")
		case utf8.RuneCountInString(k) > maxTagKey:
			return s3err.New(s3err.InvalidTag, "The TagKey you have provided is too long, max 128")
		case strings.HasPrefix(strings.ToLower(k), "aws:"):
			return s3err.New(s3err.InvalidTag, "Your TagKey cannot be prefixed with aws:")
		case !validTagText(v):
			return s3err.New(s3err.InvalidTag, "The TagValue you have provided is invalid")
		case utf8.RuneCountInString(v) > maxTagValue:
			return s3err.New(s3err.InvalidTag, "The TagValue you have provided is too long, max 256")
		}
	}
	return nil
}

// validTagText reports whether s holds only what a tag may: letters,
// digits, spaces and + - = . _ : / @.
func validTagText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsSpace(r) && !strings.ContainsRune("+-=._:/@", r) {
			return false
		}
	}
	return true
}
