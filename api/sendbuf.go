// A wider send buffer for large bodies: a restore's streams of hundreds
// of MiB to a client that reads at its own pace (hashing every byte)
// fill the socket again and again, and each time the node parks the
// stream's goroutine and the poller wakes it. The kernel's autotuned
// buffer (4 MiB) left the node switching context 1,400-1,900 times per
// GiB sent (nginx 500-650) at 0.21 s of CPU per GiB; with twice that,
// 1,100 at 0.15 s (nginx 0.15 s).
package api

import (
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

const (
	// wideBody is the smallest body whose connection gets the wider
	// send buffer: a chunk of the default size.
	wideBody = 8 << 20
	// wideSendBuffer is the send buffer asked for: the autotuned
	// buffer's usual ceiling (net.ipv4.tcp_wmem's last field), which a
	// loopback connection reaches at once. The kernel doubles what is
	// asked for (its bookkeeping), so the socket holds twice as much.
	wideSendBuffer = 4 << 20
)

// canWiden tells whether the kernel grants wideSendBuffer: asking for a
// buffer fixes it at what is granted, capped at net.core.wmem_max, and
// turns its autotuning off; under a smaller cap that would shrink it.
var canWiden = sync.OnceValue(func() bool {
	b, err := os.ReadFile("/proc/sys/net/core/wmem_max")
	if err != nil {
		return false
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return err == nil && n >= wideSendBuffer
})

// widen gives c's socket the wider send buffer for a body of n bytes,
// where it is plain TCP, the body is large and the kernel grants it.
// It stays for the connection's later answers.
func (c *trackedConn) widen(n int64) {
	tcp, ok := c.Conn.(*net.TCPConn)
	if !ok || n < wideBody || !canWiden() {
		return
	}
	tcp.SetWriteBuffer(wideSendBuffer) //nolint:errcheck // an optimisation: the default buffer still works
}
