// Body: headers buffered before it leave first, then the body as it is,
// straight to the connection; without the connection's writer it is an
// ordinary reader.
package membody

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"testing"
)

func TestWritesAfterTheHeaders(t *testing.T) {
	body := bytes.Repeat([]byte("sample-"), 20000) // 140,000 bytes
	client, server := net.Pipe()
	defer client.Close()
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(client)
		got <- b
	}()
	bw := bufio.NewWriterSize(server, 256<<10) // larger than the body: a copy would fit
	bw.WriteString("HTTP/1.1 200 OK\r\n\r\n")
	n, err := New(body, server).WriteTo(bw)
	if err != nil || n != int64(len(body)) {
		t.Fatalf("WriteTo = %d, %v", n, err)
	}
	if bw.Buffered() != 0 {
		t.Fatalf("%d bytes left in the buffer", bw.Buffered())
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
