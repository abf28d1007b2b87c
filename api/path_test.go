// Path decoding, virtual-host matching and the name rules.
package api

import (
	"errors"
	"strings"
	"testing"

	"github.com/granary-dev/granary/api/s3err"
)

func TestSplitTarget(t *testing.T) {
	suffixes := []string{".s3.test"}
	cases := []struct {
		host, path, bucket, key string
		bad                     bool
	}{
		{"h", "/", "", "", false},
		{"h", "/b", "b", "", false},
		{"h", "/b/", "b", "", false},
		{"h", "/b/k", "b", "k", false},
		{"h", "/b/a//c/", "b", "a//c/", false},
		{"h", "/b/a%20b+c%2Bd", "b", "a b+c+d", false},
		{"h", "/b/%E6%97%A5", "b", "日", false},
		{"h", "/b/%2e%2e", "b", "..", false},
		{"h", "/b/%zz", "", "", true},
		{"h", "/b/%4", "", "", true},
		{"h", "b/k", "", "", true},
		{"bkt.s3.test:9000", "/k/x", "bkt", "k/x", false},
		{"BKT.S3.TEST", "/", "bkt", "", false},
		{"s3.test:9000", "/b/k", "b", "k", false},
		{"[::1]:9000", "/b/k", "b", "k", false},
	}
	for _, c := range cases {
		b, k, err := splitTarget(c.host, []byte(c.path), suffixes)
		if c.bad {
			if se, ok := s3err.As(err); !ok || se.Code != s3err.InvalidURI {
				t.Errorf("%s %s: err %v, want InvalidURI", c.host, c.path, err)
			}
			continue
		}
		if err != nil || b != c.bucket || k != c.key {
			t.Errorf("%s %s = %q %q %v; want %q %q", c.host, c.path, b, k, err, c.bucket, c.key)
		}
	}
}

func TestBucketNames(t *testing.T) {
	good := []string{"abc", "my-bucket", "my.bucket.1", "a1b", strings.Repeat("a", 63), "metrics", "healthz", "1.2.3"}
	bad := []string{"", "ab", strings.Repeat("a", 64), "Abc", "a_b", "-ab", "ab-", ".ab", "ab.", "a..b",
		"a.-b", "a-.b", "192.168.0.1", "xn--abc", "sthree-x", "abc-s3alias", "abc--ol-s3", "a b", "a/b"}
	for _, n := range good {
		if !validBucketName(n) {
			t.Errorf("%q rejected", n)
		}
	}
	for _, n := range bad {
		if validBucketName(n) {
			t.Errorf("%q accepted", n)
		}
	}
}

func TestCheckKey(t *testing.T) {
	good := []string{"k", "a/b", "a//b", "dir/", "...", "a..b", ".hidden", "a/.b/c", "日本", strings.Repeat("x", 1024)}
	for _, k := range good {
		if err := checkKey(k); err != nil {
			t.Errorf("%q: %v", k, err)
		}
	}
	bad := map[string]s3err.Code{
		"":                        s3err.InvalidArgument,
		".":                       s3err.InvalidArgument,
		"..":                      s3err.InvalidArgument,
		"../a":                    s3err.InvalidArgument,
		"a/..":                    s3err.InvalidArgument,
		"a/./b":                   s3err.InvalidArgument,
		"/../a":                   s3err.InvalidArgument,
		"a\x00b":                  s3err.InvalidArgument,
		"bad\xffutf8":             s3err.InvalidArgument,
		strings.Repeat("x", 1025): s3err.KeyTooLongError,
	}
	for k, code := range bad {
		var se *s3err.Error
		if err := checkKey(k); !errors.As(err, &se) || se.Code != code {
			t.Errorf("%q: %v, want %s", k, err, code)
		}
	}
}

func TestURLEncodeName(t *testing.T) {
	cases := map[string]string{
		"plain/key.txt": "plain/key.txt",
		"a b+c":         "a%20b%2Bc",
		"日":             "%E6%97%A5",
		"%&=?#":         "%25%26%3D%3F%23",
	}
	for in, want := range cases {
		if got := urlEncodeName(in); got != want {
			t.Errorf("urlEncodeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestContinuationToken(t *testing.T) {
	for _, after := range []string{"a", "dir/", "日本/x y"} {
		got, err := decodeToken(encodeToken(after))
		if err != nil || got != after {
			t.Errorf("round trip %q: %q, %v", after, got, err)
		}
	}
	for _, tok := range []string{"", "!!", "YQ", encodeToken("")} {
		if _, err := decodeToken(tok); err == nil {
			t.Errorf("token %q accepted", tok)
		}
	}
}
