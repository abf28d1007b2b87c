// Package testhttp holds the plain HTTP calls tests make to a node (the
// admin routes, which no S3 client sends).
package testhttp

import (
	"io"
	"net/http"
	"testing"
)

// Get GETs url with the header pairs (name, value, name, value, ...) and
// returns the status and the body; a transport error fails t.
func Get(t testing.TB, url string, header ...string) (int, string) {
	t.Helper()
	return Do(t, http.DefaultTransport, http.MethodGet, url, nil, header...)
}

// Do sends method url with body and the header pairs through rt and
// returns the status and the body; a transport error fails t.
func Do(t testing.TB, rt http.RoundTripper, method, url string, body io.Reader, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// Bearer is the header pair of a bearer token, none for "".
func Bearer(token string) []string {
	if token == "" {
		return nil
	}
	return []string{"Authorization", "Bearer " + token}
}
