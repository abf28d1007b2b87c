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
		{Name: "Host", Value: "node:9000"}, {Name: "X-Amz-Meta-A", Value: "one"},
		{Name: "X-Amz-Date", Value: "20261129T010000Z"}, {Name: "X-Amz-Meta-A", Value: "two"},
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
