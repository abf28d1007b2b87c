// Tests of the fault proxy against a real HTTP server.
package faultproxy

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestModes: a real HTTP server behind the proxy answers, then hangs
// (pooled connections included), stalls its bodies, refuses, and answers
// again on the same address.
func TestModes(t *testing.T) {
	body := strings.Repeat("x", 1<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) }))
	defer srv.Close()
	p, err := Start(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cl := &http.Client{Timeout: 500 * time.Millisecond}
	get := func() (string, error) {
		resp, err := cl.Get("http://" + p.Addr() + "/")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	if got, err := get(); err != nil || got != body {
		t.Fatalf("forward: %d bytes, %v", len(got), err)
	}
	for _, c := range []struct {
		mode Mode
		want func(error) bool
	}{
		{Hang, isTimeout},
		{StallBody, isTimeout},
		{Refuse, func(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }},
	} {
		if err := p.Set(c.mode); err != nil {
			t.Fatal(err)
		}
		if _, err := get(); !c.want(err) {
			t.Fatalf("%v: %v", c.mode, err)
		}
	}
	if err := p.Set(Forward); err != nil {
		t.Fatal(err)
	}
	if got, err := get(); err != nil || got != body {
		t.Fatalf("forward again: %d bytes, %v", len(got), err)
	}
}

func isTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) && ne.Timeout()
}
