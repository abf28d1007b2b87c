// Listing a million keys answered from the catalog, over the S3 API with
// minio-go (ListObjectsV2, 1000 keys a page), against the catalog's own
// in-process List as the ceiling.
package api

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/catalog"
)

const benchListDirs, benchListPerDir = 1000, 1000

// catalogEnv serves a bucket whose "train/" holds a million keys in the
// catalog (not at the origin: the origin is never asked).
func catalogEnv(b *testing.B) (*env, *catalog.DB, string) {
	origin, root := openFS(b)
	cat, err := catalog.Open(catalog.Options{Path: filepath.Join(b.TempDir(), "c.db"), Logger: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cat.Close() })
	e := newEnvOver(b, gateway.Options{Origin: origin, Catalog: cat, Freshness: gateway.Freshness{Mode: gateway.Immutable}}, root, nil)
	bucket := e.makeBucket(b, "list")
	i, now := 0, time.Now()
	next := func() (catalog.Entry, bool, error) {
		if i == benchListDirs*benchListPerDir {
			return catalog.Entry{}, false, nil
		}
		k := fmt.Sprintf("train/d%04d/%06d.jpg", i/benchListPerDir, i%benchListPerDir)
		i++
		return catalog.Entry{Key: k, Size: 100 << 10, ETag: "0123456789abcdef0123456789abcdef", LastModified: now}, true, nil
	}
	if err := cat.Load(bucket, "train/", now, next, nil); err != nil {
		b.Fatal(err)
	}
	return e, cat, bucket
}

func BenchmarkListCatalog1M(b *testing.B) {
	e, cat, bucket := catalogEnv(b)
	const total = benchListDirs * benchListPerDir
	b.Run("S3 API", func(b *testing.B) {
		for b.Loop() {
			n := 0
			for o := range e.client.ListObjectsIter(context.Background(), bucket, minio.ListObjectsOptions{Prefix: "train/", Recursive: true}) {
				if o.Err != nil {
					b.Fatal(o.Err)
				}
				n++
			}
			if n != total {
				b.Fatalf("listed %d keys, want %d", n, total)
			}
		}
		b.ReportMetric(float64(total*b.N)/b.Elapsed().Seconds(), "keys/s")
	})
	b.Run("S3 API unparsed", func(b *testing.B) {
		// The server's share: pages fetched with presigned URLs and only
		// scanned for their keys and continuation token.
		client := &fasthttp.Client{}
		for b.Loop() {
			n, token := 0, ""
			for {
				q := url.Values{"list-type": {"2"}, "prefix": {"train/"}, "max-keys": {"1000"}}
				if token != "" {
					q.Set("continuation-token", token)
				}
				u, err := e.client.Presign(context.Background(), http.MethodGet, bucket, "", time.Hour, q)
				if err != nil {
					b.Fatal(err)
				}
				status, body, err := client.Get(nil, u.String())
				if err != nil || status != 200 {
					b.Fatalf("list page: %d, %v", status, err)
				}
				n += bytes.Count(body, []byte("<Key>"))
				token = between(string(body), "<NextContinuationToken>", "</NextContinuationToken>")
				if token == "" {
					break
				}
			}
			if n != total {
				b.Fatalf("listed %d keys, want %d", n, total)
			}
		}
		b.ReportMetric(float64(total*b.N)/b.Elapsed().Seconds(), "keys/s")
	})
	b.Run("S3 API delimiter", func(b *testing.B) {
		for b.Loop() {
			n := 0
			for o := range e.client.ListObjectsIter(context.Background(), bucket, minio.ListObjectsOptions{Prefix: "train/"}) {
				if o.Err != nil {
					b.Fatal(o.Err)
				}
				n++
			}
			if n != benchListDirs {
				b.Fatalf("listed %d prefixes, want %d", n, benchListDirs)
			}
		}
	})
	b.Run("catalog in-process", func(b *testing.B) {
		for b.Loop() {
			opts, n := store.ListOptions{Prefix: "train/", MaxKeys: 1000}, 0
			for {
				page, err := cat.List(bucket, opts)
				if err != nil {
					b.Fatal(err)
				}
				n += len(page.Objects)
				if !page.IsTruncated {
					break
				}
				opts.After = page.NextAfter
			}
			if n != total {
				b.Fatalf("listed %d keys, want %d", n, total)
			}
		}
		b.ReportMetric(float64(total*b.N)/b.Elapsed().Seconds(), "keys/s")
	})
}

// between returns the text between the first open and the next close in
// s, or "".
func between(s, open, close string) string {
	_, rest, ok := strings.Cut(s, open)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, close)
	return v
}
