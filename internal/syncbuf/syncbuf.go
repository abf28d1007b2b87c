// Package syncbuf is a bytes.Buffer for logs that goroutines write while
// a test reads them.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is safe for concurrent writers and readers. The zero value is
// empty and ready.
type Buffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
