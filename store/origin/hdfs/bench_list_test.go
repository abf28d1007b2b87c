// A listing over a slow link to the namenode (internal/slowproxy, 5 ms
// each way), with the keys' attributes asked ahead and, as the
// reference, one at a time: go test ./store/origin/hdfs -run '^$' -bench
// BenchmarkListOverSlowLink -benchtime 3x (in make bench).
package hdfs

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

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
