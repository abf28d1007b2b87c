// The request authenticate hands sigv4: the path, query, host and header
// fields exactly as received, taken in one walk into one string.
package api

import (
	"bufio"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/granary-dev/granary/api/sigv4"
)

func TestWireFill(t *testing.T) {
	raw := "GET /b/a%20key?x=1&y HTTP/1.1\r\n" +
		"Host: node:9000\r\n" +
		"x-amz-meta-A:  one \r\n" +
		"X-Amz-Date: 20261129T010000Z\r\n" +
		"X-AMZ-META-a: two\r\n" +
		"\r\n"
	var req fasthttp.Request
	if err := req.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
		t.Fatal(err)
	}
	w := wirePool.Get().(*wire)
	defer w.release()
	got := w.fill(&req)
	if got.RawPath != "/b/a%20key" || got.RawQuery != "x=1&y" || got.Host != "node:9000" || got.ContentLength != -1 {
		t.Fatalf("path %q, query %q, host %q, length %d", got.RawPath, got.RawQuery, got.Host, got.ContentLength)
	}
	want := sigv4.Header{
		{Name: "Host", Value: "node:9000"}, {Name: "x-amz-meta-A", Value: "one"},
		{Name: "X-Amz-Date", Value: "20261129T010000Z"}, {Name: "X-AMZ-META-a", Value: "two"},
	}
	if len(got.Header) != len(want) {
		t.Fatalf("fields %q, want %q", got.Header, want)
	}
	for i := range want {
		if got.Header[i] != want[i] {
			t.Fatalf("field %d: %q, want %q", i, got.Header[i], want[i])
		}
	}
	var put fasthttp.Request
	put.Header.DisableNormalizing()
	if err := put.Header.Read(bufio.NewReader(strings.NewReader("PUT /b/k HTTP/1.1\r\nHost: h\r\ncontent-length: 42\r\n\r\n"))); err != nil {
		t.Fatal(err)
	}
	if n := w.fill(&put).ContentLength; n != 42 {
		t.Fatalf("Content-Length %d, want 42", n)
	}
	// One allocation, the string every part shares, however many fields.
	if allocs := testing.AllocsPerRun(50, func() { w.fill(&req) }); allocs > 1 {
		t.Fatalf("fill allocates %.0f times, want 1", allocs)
	}
}

// The fields fill splits from the header block are fasthttp's own, in
// its order, names aside (fill keeps their case as sent): with bare line
// feeds, white space around values, empty values and folded lines (which
// fasthttp joins).
func TestWireFieldsAsFasthttpReadsThem(t *testing.T) {
	for _, block := range []string{
		"Host: h\r\nx-amz-meta-a:  one \t\r\nX-Amz-Date:20261129T010000Z\r\nx-amz-meta-a: two\r\n\r\n",
		"Host: h\nX-Amz-Meta-B: b\r\n\r\n",
		"Host: h\r\nX-Amz-Meta-C:c\r\nempty:\r\n\r\n",
		"Host: h\r\nX-Amz-Meta-F: first\r\n  folded\r\nX-Amz-Meta-G: g\r\n\r\n",
		"Host: h\r\nX-Amz-Meta-T: tab\r\n\tfolded\r\n\r\n",
	} {
		// Two reads: a walk that joins folded lines rewrites the block.
		var req, ref fasthttp.Request
		for _, r := range []*fasthttp.Request{&req, &ref} {
			if err := r.Read(bufio.NewReader(strings.NewReader("GET /b/k HTTP/1.1\r\n" + block))); err != nil {
				t.Fatalf("%q: %v", block, err)
			}
		}
		w := &wire{}
		got := w.fill(&req).Header
		var want sigv4.Header
		ref.Header.VisitAllInOrder(func(k, v []byte) { want = append(want, sigv4.Field{Name: string(k), Value: string(v)}) })
		if len(got) != len(want) {
			t.Fatalf("%q: fields %q, fasthttp %q", block, got, want)
		}
		for i := range want {
			if !strings.EqualFold(got[i].Name, want[i].Name) || got[i].Value != want[i].Value {
				t.Fatalf("%q: field %d is %q, fasthttp %q", block, i, got[i], want[i])
			}
		}
	}
}

// BenchmarkWireFill takes the sigv4.Request of a GET as boto3 sends it.
func BenchmarkWireFill(b *testing.B) {
	raw := "GET /bench/datasets/imagenet/train/n01440764/img_0001.JPEG HTTP/1.1\r\n" +
		"Host: 127.0.0.1:9000\r\nAccept-Encoding: identity\r\n" +
		"User-Agent: Boto3/1.35.0 md/Botocore#1.35.0 ua/2.0 os/linux#6.8.0 md/arch#x86_64 lang/python#3.12.3 md/pyimpl#CPython cfg/retry-mode#legacy Botocore/1.35.0\r\n" +
		"X-Amz-Date: 20261129T010000Z\r\n" +
		"X-Amz-Content-SHA256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\r\n" +
		"Authorization: AWS4-HMAC-SHA256 Credential=granary/20261129/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=" + strings.Repeat("ab", 32) + "\r\n" +
		"amz-sdk-invocation-id: 0b4f6d4e-7f1a-4c43-9a57-3c0e7d1f2b9a\r\namz-sdk-request: attempt=1; max=5\r\n\r\n"
	var req fasthttp.Request
	if err := req.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
		b.Fatal(err)
	}
	w := wirePool.Get().(*wire)
	b.ReportAllocs()
	for b.Loop() {
		if r := w.fill(&req); len(r.Header) != 8 {
			b.Fatalf("%d fields", len(r.Header))
		}
	}
}
