// A listing over a slow link to the namenode (internal/slowproxy, 5 ms
// each way), with the keys' attributes asked ahead and, as references,
// one at a time and a plain client's directory read (names and sizes
// only): go test ./store/origin/hdfs -run '^$' -bench
// BenchmarkListOverSlowLink -benchtime 3x (in make bench).
package hdfs

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	hdfsclient "github.com/colinmarc/hdfs/v2"

	"github.com/granary-dev/granary/internal/hdfstest"
	"github.com/granary-dev/granary/internal/slowproxy"
	"github.com/granary-dev/granary/store"
)

func BenchmarkListOverSlowLink(b *testing.B) {
	srv := hdfstest.Start(b, hdfstest.Options{})
	ctx := context.Background()
	setup, err := New(Options{Addresses: []string{srv.NameNode}, Base: "/granary", User: "hdfs", PartsDir: b.TempDir(), DialTimeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer setup.Close()
	if err := setup.MakeBucket(ctx, "lst"); err != nil {
		b.Fatal(err)
	}
	const keys = 300
	for i := range keys {
		if _, err := setup.Put(ctx, "lst", fmt.Sprintf("k/%04d", i), bytes.NewReader([]byte("x")), 1, store.ObjectMeta{}); err != nil {
			b.Fatal(err)
		}
	}
	p, err := slowproxy.Start(srv.NameNode, slowproxy.Options{Latency: 5 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	o, err := New(Options{Addresses: []string{p.Addr()}, Base: "/granary", User: "hdfs", PartsDir: b.TempDir(), DialTimeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer o.Close()
	// The reference: what an HDFS client gets from the namenode alone,
	// the directory's names and sizes (no ETag), over the same link.
	b.Run("direct-readdir", func(b *testing.B) {
		cl, err := hdfsclient.NewClient(hdfsclient.ClientOptions{Addresses: []string{p.Addr()}, User: "hdfs"})
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		for b.Loop() {
			fis, err := cl.ReadDir("/granary/lst/k")
			if err != nil || len(fis) != keys {
				b.Fatalf("%d entries, %v", len(fis), err)
			}
		}
	})
	for _, c := range []struct {
		name  string
		ahead int
	}{{"ahead", listPrefetch}, {"one-at-a-time", 0}} {
		b.Run(c.name, func(b *testing.B) {
			old := listPrefetch
			listPrefetch = c.ahead
			defer func() { listPrefetch = old }()
			for b.Loop() {
				page, err := o.List(ctx, "lst", store.ListOptions{Prefix: "k/", MaxKeys: keys})
				if err != nil || len(page.Objects) != keys {
					b.Fatalf("%d keys, %v", len(page.Objects), err)
				}
			}
		})
	}
}
