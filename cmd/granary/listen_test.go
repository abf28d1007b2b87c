package main

import (
	"context"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestListenBindsUnlessActivatedForThisProcess(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	// Variables left by a parent's activation are not this process's.
	ln, err := listen("127.0.0.1:0", env(map[string]string{"LISTEN_FDS": "1", "LISTEN_PID": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	_, err = listen("127.0.0.1:0", env(map[string]string{"LISTEN_FDS": "2", "LISTEN_PID": strconv.Itoa(os.Getpid())}))
	if err == nil || !strings.Contains(err.Error(), "one socket") {
		t.Fatalf("two activated sockets: %v", err)
	}
}

func TestServeOnAnActivatedSocket(t *testing.T) {
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	// --listen names an address this machine does not have: the node
	// must serve on the socket it was handed, not bind.
	c := startChildOn(t, ln, map[string]string{"GRANARY_DATA_DIR": t.TempDir()}, "--listen", "192.0.2.1:9")
	if c.addr != addr {
		t.Fatalf("serving on %s, handed %s", c.addr, addr)
	}
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+addr+"/healthz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %d", resp.StatusCode)
	}
	c.stop(t)
}
