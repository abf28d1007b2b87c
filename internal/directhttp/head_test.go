// The head a direct GET sends, as a real server reads it.
package directhttp

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestHeadAsTheServerReadsIt: the request line with its query, Host, the
// request's headers with every value, and none of the body's framing; a
// value that cannot be sent as it is goes as net/http sends it.
func TestHeadAsTheServerReadsIt(t *testing.T) {
	seen := make(chan *http.Request, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r
	}))
	defer srv.Close()
	tr, _ := counted(&http.Transport{})
	defer tr.CloseIdleConnections()
	send := func(h http.Header) *http.Request {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/b/k%20ey?chunk=3&x=a%26b", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header = h
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return <-seen
	}
	r := send(http.Header{"X-Granary-From": {"n1"}, "X-Multi": {"a", "b"}, "Content-Length": {"9"}})
	if r.RequestURI != "/b/k%20ey?chunk=3&x=a%26b" || r.Host != srv.Listener.Addr().String() {
		t.Fatalf("request line %q, host %q", r.RequestURI, r.Host)
	}
	if got := r.Header.Get("X-Granary-From"); got != "n1" {
		t.Fatalf("X-Granary-From %q", got)
	}
	if got := r.Header.Values("X-Multi"); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("X-Multi %q", got)
	}
	if r.ContentLength != 0 || r.Header.Get("Content-Length") != "" {
		t.Fatalf("a bodiless GET arrived with length %d (%q)", r.ContentLength, r.Header.Get("Content-Length"))
	}
	r = send(http.Header{"X-Bad": {"one\r\nX-Injected: yes"}})
	if r.Header.Get("X-Injected") != "" || r.Header.Get("X-Bad") != "one  X-Injected: yes" {
		t.Fatalf("a value with a line break arrived as %q, injected %q", r.Header.Get("X-Bad"), r.Header.Get("X-Injected"))
	}
}
