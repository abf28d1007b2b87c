// Tests of the fault proxy against a real HTTP server.
package faultproxy

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
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

// TestFlipBodies: over one kept-alive connection, each large answer
// arrives with exactly its middle byte flipped and each small one as
// sent; in Forward again, every answer arrives as sent.
func TestFlipBodies(t *testing.T) {
	large, small := strings.Repeat("L", FlipMin+11), strings.Repeat("s", 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := small
		if r.URL.Path == "/large" {
			body = large
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body))) // else a large one is chunked
		io.WriteString(w, body)
	}))
	defer srv.Close()
	p, err := Start(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Set(FlipBodies); err != nil {
		t.Fatal(err)
	}
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer cl.CloseIdleConnections()
	get := func(path string) string {
		resp, err := cl.Get("http://" + p.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	flipped := []byte(large)
	flipped[len(large)/2] ^= 1
	for range 2 {
		if got := get("/large"); got != string(flipped) {
			t.Fatalf("a large answer: %d bytes, the middle one flipped: %v", len(got), got == large)
		}
		if got := get("/small"); got != small {
			t.Fatalf("a small answer changed: %q", got)
		}
	}
	if n := p.Flipped(); n != 2 {
		t.Fatalf("%d answers flipped, want 2", n)
	}
	if err := p.Set(Forward); err != nil {
		t.Fatal(err)
	}
	if got := get("/large"); got != large {
		t.Fatal("forward again: the answer is changed")
	}
}
