// The transport against real servers: GETs over HTTPS reuse one verified
// connection, a request with a body and one through a proxy go to Other,
// and an address without a port gets its scheme's.
package directhttp

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/granary-dev/granary/internal/testhttp"
)

// counted is a transport whose dials are counted.
func counted(other *http.Transport) (*Transport, *atomic.Int64) {
	var dials atomic.Int64
	d := &net.Dialer{Timeout: 5 * time.Second}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}
	return &Transport{Dial: dial, HeaderTimeout: 5 * time.Second, Other: other}, &dials
}

// get sends method u through rt and returns the body.
func get(t *testing.T, rt http.RoundTripper, method, u string, body io.Reader) string {
	_, b := testhttp.Do(t, rt, method, u, body)
	return b
}

func TestGETsOverTLSReuseOneConnection(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Method+" "+r.URL.Path)
	}))
	defer srv.Close()
	other := srv.Client().Transport.(*http.Transport).Clone() // trusts the server's certificate
	tr, dials := counted(other)
	defer tr.CloseIdleConnections()
	for i := range 10 {
		if got := get(t, tr, http.MethodGet, srv.URL+"/obj", nil); got != "GET /obj" {
			t.Fatalf("call %d answered %q", i, got)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Fatalf("10 GETs in a row dialed %d times, want 1", n)
	}
	// A PUT goes to Other, which dials on its own.
	if got := get(t, tr, http.MethodPut, srv.URL+"/obj", strings.NewReader("x")); got != "PUT /obj" {
		t.Fatalf("a PUT answered %q", got)
	}
	if n := dials.Load(); n != 1 {
		t.Fatalf("a PUT went through the direct path (%d dials)", n)
	}
}

func TestProxiedGETsGoToOther(t *testing.T) {
	var proxied atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		io.WriteString(w, "via proxy")
	}))
	defer proxy.Close()
	pu, _ := url.Parse(proxy.URL)
	tr, dials := counted(&http.Transport{Proxy: http.ProxyURL(pu)})
	defer tr.CloseIdleConnections()
	if got := get(t, tr, http.MethodGet, "http://origin.invalid/obj", nil); got != "via proxy" || proxied.Load() != 1 {
		t.Fatalf("a GET with a proxy set answered %q, %d through the proxy", got, proxied.Load())
	}
	if n := dials.Load(); n != 0 {
		t.Fatalf("a proxied GET dialed directly %d times", n)
	}
}

func TestAddressWithoutPort(t *testing.T) {
	tr := &Transport{Other: &http.Transport{}}
	var got string
	tr.Dial = func(_ context.Context, _, addr string) (net.Conn, error) {
		got = addr
		return nil, &net.OpError{Op: "dial", Err: io.ErrClosedPipe}
	}
	req, _ := http.NewRequest(http.MethodGet, "http://example.invalid/x", nil)
	if _, err := tr.RoundTrip(req); err == nil {
		t.Fatal("a failed dial answered")
	}
	if got != "example.invalid:80" {
		t.Fatalf("dialed %q, want example.invalid:80", got)
	}
}
