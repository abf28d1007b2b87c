// Body: on a connection that holds the response's head, the head and the
// body leave together, straight to the connection, past the writer
// fasthttp hands it; otherwise it is an ordinary reader.
package membody

import (
	"bytes"
	"io"
	"net"
	"testing"
)

func TestWritesPastTheWriterWithTheHeldHead(t *testing.T) {
	body := bytes.Repeat([]byte("sample-"), 20000) // 140,000 bytes
	client, server := net.Pipe()
	defer client.Close()
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(client)
		got <- b
	}()
	rc := &recConn{Conn: server}
	rc.Hold()
	rc.Write([]byte("HTTP/1.1 200 OK\r\n\r\n")) // the head fasthttp flushes first
	var w bytes.Buffer
	n, err := New(body, rc).WriteTo(&w)
	if err != nil || n != int64(len(body)) {
		t.Fatalf("WriteTo = %d, %v", n, err)
	}
	if w.Len() != 0 {
		t.Fatalf("%d bytes copied into the writer", w.Len())
	}
	if sends := rc.log(); len(sends) != 1 || sends[0] != "writev" {
		t.Fatalf("sent as %v, want one writev", sends)
	}
	server.Close()
	want := append([]byte("HTTP/1.1 200 OK\r\n\r\n"), body...)
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("the connection got %d bytes, want headers then the body (%d)", len(b), len(want))
	}
	var other bytes.Buffer
	if n, err := io.Copy(&other, New(body, nil)); err != nil || n != int64(len(body)) || !bytes.Equal(other.Bytes(), body) {
		t.Fatalf("copy = %d, %v", n, err)
	}
	if b, err := io.ReadAll(io.LimitReader(New(body, nil), 1<<20)); err != nil || !bytes.Equal(b, body) {
		t.Fatalf("read = %d bytes, %v", len(b), err)
	}
}
