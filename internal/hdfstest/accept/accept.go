// Package accept is the connection loop of the test HDFS servers: each
// connection on its own goroutine, and on shutdown every connection still
// open closed and every goroutine waited for.
package accept

import (
	"errors"
	"net"
	"sync"
)

// Serve runs handle on each connection accepted on ln (closing it when
// handle returns) until ln is closed. It then closes the connections still
// open (aborting what they were doing), waits for their goroutines and
// returns nil; any other Accept error is returned after the same shutdown.
func Serve(ln net.Listener, handle func(net.Conn)) error {
	var (
		mu    sync.Mutex // guards conns
		conns = map[net.Conn]struct{}{}
		wg    sync.WaitGroup // one per connection goroutine
	)
	defer func() {
		// Only this loop adds connections, and it has stopped.
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		mu.Lock()
		conns[c] = struct{}{}
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			handle(c)
			c.Close()
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
		}()
	}
}
