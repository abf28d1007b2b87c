// Read timeouts by phase over real connections: headers trickled a byte
// at a time are cut at ReadHeaderTimeout, while a body that keeps moving
// and a keep-alive connection that idles both outlast it.
package api

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

// TestTrickledHeadersCut: a client that sends its headers one byte per
// second, and would go on for as long as the server reads, is answered
// RequestTimeout and closed at the header timeout, though IOTimeout is ten
// minutes (the test's own bound is one minute).
func TestTrickledHeadersCut(t *testing.T) {
	e := newEnv(t, backends[0], func(o *nodeOptions) {
		o.ReadHeaderTimeout = 2 * time.Second
		o.IOTimeout = 10 * time.Minute
	})
	conn, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stop := make(chan struct{})
	defer close(stop)
	go trickle(conn, stop, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ")
	conn.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to the trickled headers: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || errorCode(t, body) != "RequestTimeout" || !resp.Close {
		t.Fatalf("trickled headers: %d %q close=%v; want 400 RequestTimeout and the connection closed", resp.StatusCode, body, resp.Close)
	}
}

// trickle writes head, then an endless header value, one byte per second,
// until a write fails or stop closes.
func trickle(conn net.Conn, stop <-chan struct{}, head string) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for i := 0; ; i++ {
		b := byte('a')
		if i < len(head) {
			b = head[i]
		}
		if _, err := conn.Write([]byte{b}); err != nil {
			return
		}
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

// TestSlowBodyOutlastsHeaderTimeout: a PUT whose headers arrive at once
// and whose body then moves in small pieces, half a header timeout apart,
// is stored whole: the body is bounded by IOTimeout between pieces, not by
// what was left of the header phase. The pieces are smaller than the 8 KiB
// fasthttp reads before the handler runs, so those first bytes alone take
// four header timeouts to arrive.
func TestSlowBodyOutlastsHeaderTimeout(t *testing.T) {
	const headerTimeout = time.Second
	e := newEnv(t, backends[0], func(o *nodeOptions) {
		o.ReadHeaderTimeout = headerTimeout
		o.IOTimeout = time.Minute
	})
	bucket := e.makeBucket(t, "slowbody")
	const pieces, piece = 10, 1 << 10
	body := bytes.Repeat([]byte("slow-body-"), pieces*piece/10)
	conn, head := e.startRawPut(t, bucket, "slow", int64(len(body)))
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Minute))
	if _, err := conn.Write(head); err != nil {
		t.Fatal(err)
	}
	gap := time.NewTicker(headerTimeout / 2)
	defer gap.Stop()
	for rest := body; len(rest) > 0; rest = rest[min(piece, len(rest)):] {
		<-gap.C
		if _, err := conn.Write(rest[:min(piece, len(rest))]); err != nil {
			t.Fatalf("the server stopped reading the moving body: %v", err)
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("slow PUT: %d %s", resp.StatusCode, msg)
	}
	got, err := e.get(t, bucket, "slow", minio.GetObjectOptions{})
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("read back %d of %d bytes: %v", len(got), len(body), err)
	}
}

// TestIdleKeepAliveOutlastsHeaderTimeout: a keep-alive connection that
// waits longer than the header timeout between requests is still served:
// its wait is bounded by IdleTimeout.
func TestIdleKeepAliveOutlastsHeaderTimeout(t *testing.T) {
	const headerTimeout = 500 * time.Millisecond
	e := newEnv(t, backends[0], func(o *nodeOptions) {
		o.ReadHeaderTimeout = headerTimeout
		o.IdleTimeout = time.Minute
	})
	conn, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Minute))
	br := bufio.NewReader(conn)
	for i := range 2 {
		if i > 0 {
			<-time.After(3 * headerTimeout) // the idle wait under test
		}
		if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d on the kept-alive connection: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
	}
}

// TestSlowGetOutlastsHeaderTimeout: a GET whose answer the client reads
// slowly, for several header timeouts, is sent whole, and the next request
// on the same kept-alive connection is served: a request without a body
// keeps its header-phase read deadline while its answer is written (it
// reads nothing more), and the next request's wait gets a fresh one.
func TestSlowGetOutlastsHeaderTimeout(t *testing.T) {
	const headerTimeout = 500 * time.Millisecond
	e := newEnv(t, backends[0], func(o *nodeOptions) {
		o.ReadHeaderTimeout = headerTimeout
		o.IOTimeout = time.Minute
		o.IdleTimeout = time.Minute
	})
	bucket := e.makeBucket(t, "slowget")
	data := bytes.Repeat([]byte("slow-get-0123456"), 1<<20) // 16 MiB: more than the sockets buffer
	e.put(t, bucket, "big", data, minio.PutObjectOptions{})
	tr := &http.Transport{MaxConnsPerHost: 1, DisableCompression: true}
	defer tr.CloseIdleConnections()
	get := func(i int, pace time.Duration) {
		req := e.buildRequest(t, rawRequest{method: http.MethodGet, path: "/" + bucket + "/big"})
		reused := false
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(c httptrace.GotConnInfo) { reused = c.Reused }}))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("GET %d: %v", i, err)
		}
		defer resp.Body.Close()
		var got bytes.Buffer
		for {
			n, err := io.CopyN(&got, resp.Body, 1<<20)
			if err != nil || n == 0 {
				break
			}
			if pace > 0 {
				<-time.After(pace) // the slow reader under test
			}
		}
		if resp.StatusCode != http.StatusOK || !bytes.Equal(got.Bytes(), data) {
			t.Fatalf("GET %d: %d, %d of %d bytes", i, resp.StatusCode, got.Len(), len(data))
		}
		if i > 0 && !reused {
			t.Errorf("GET %d came on a new connection: the slow GET's was closed", i)
		}
	}
	get(0, headerTimeout/2) // 16 pieces: eight header timeouts
	get(1, 0)
}
