// Benchmarks on a million keys: Load, paging through a flat listing, and
// a delimiter listing of 1000 directories of 1000 keys.
package catalog

import (
	"fmt"
	"testing"
	"time"

	"github.com/granary-dev/granary/store"
)

const (
	benchDirs    = 1000
	benchPerDir  = 1000
	benchKeysAll = benchDirs * benchPerDir
)

// benchNext yields the million keys dir/key in order without holding
// them: the listing streams like an origin's.
func benchNext() func() (Entry, bool, error) {
	i := 0
	return func() (Entry, bool, error) {
		if i == benchKeysAll {
			return Entry{}, false, nil
		}
		k := fmt.Sprintf("dir%04d/key%04d", i/benchPerDir, i%benchPerDir)
		i++
		return Entry{Key: k, Size: int64(i), ETag: "0123456789abcdef0123456789abcdef", LastModified: t0}, true, nil
	}
}

func benchLoad(b *testing.B, db *DB) {
	b.Helper()
	n := 0
	if err := db.Load("bench", "", t0, benchNext(), func(Change) error { n++; return nil }); err != nil {
		b.Fatal(err)
	}
	if n != benchKeysAll {
		b.Fatalf("%d changes", n)
	}
}

func BenchmarkLoad1M(b *testing.B) {
	var d time.Duration
	for b.Loop() {
		b.StopTimer()
		db := openT(b)
		b.StartTimer()
		start := time.Now()
		benchLoad(b, db)
		d += time.Since(start)
	}
	b.ReportMetric(float64(b.N*benchKeysAll)/d.Seconds(), "keys/s")
}

func BenchmarkList1M(b *testing.B) {
	db := openT(b)
	benchLoad(b, db)
	start, n := time.Now(), 0
	for b.Loop() {
		opts := store.ListOptions{MaxKeys: 1000}
		for {
			p, err := db.List("bench", opts)
			if err != nil {
				b.Fatal(err)
			}
			n += len(p.Objects)
			if !p.IsTruncated {
				break
			}
			opts.After = p.NextAfter
		}
	}
	if n != b.N*benchKeysAll {
		b.Fatalf("listed %d keys", n)
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "keys/s")
}

func BenchmarkListDelimiter1M(b *testing.B) {
	db := openT(b)
	benchLoad(b, db)
	for b.Loop() {
		p, err := db.List("bench", store.ListOptions{Delimiter: "/"})
		if err != nil {
			b.Fatal(err)
		}
		if len(p.CommonPrefixes) != benchDirs || p.IsTruncated {
			b.Fatalf("%d prefixes, truncated %v", len(p.CommonPrefixes), p.IsTruncated)
		}
	}
}
