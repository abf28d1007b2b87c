// The objects a load test reads: deterministic pseudo-random bytes, seeded
// into MinIO and held in memory to serve (trivial server) and to verify.
package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/minio/minio-go/v7"
)

// object is one key and its expected bytes.
type object struct {
	key  string
	data []byte
}

// objectSet is the objects of one small-object scenario.
type objectSet struct {
	name    string // e.g. "4KiB"
	size    int
	conc    int
	objects []object
}

// dataset is everything a run reads. Small objects are windows into one
// random pool at distinct offsets, so 10,000 objects of 100 KiB cost the
// pool's memory, not a gigabyte, yet no two objects share their bytes.
type dataset struct {
	bucket string
	sets   []objectSet
	// large objects, one per large scenario so that each one's cold pass
	// really is cold for granary: read whole, then (plan.ranges > 0) in
	// ranges.
	large []object
}

// plan is the shape of a run.
type plan struct {
	count     int   // objects per small set
	sizes     []int // small object sizes
	concs     []int // concurrency levels
	largeSize int64
	ranges    int // parallel ranges for the large ranged read; 0: no ranged object
}

func fullPlan() plan {
	return plan{count: 10_000, sizes: []int{4 << 10, 100 << 10}, concs: []int{16, 64}, largeSize: 1 << 30, ranges: 8}
}

func quickPlan() plan {
	return plan{count: 300, sizes: []int{4 << 10, 100 << 10}, concs: []int{16, 64}, largeSize: 64 << 20, ranges: 8}
}

// bodiesPlan is the bodies scenario's: the reads lineup over objects a
// node's RAM tier keeps in its memory file and sends with sendfile
// (store/ram's arena: 64 KiB to 1 MiB), 1,000 of each size per
// concurrency (300 with quick), one 64 MiB object for the large reads.
func bodiesPlan(quick bool) plan {
	p := plan{count: 1_000, sizes: []int{256 << 10, 1 << 20}, concs: []int{16, 64}, largeSize: 64 << 20}
	if quick {
		p.count = 300
	}
	return p
}

// sizeName renders a byte count as the report shows it.
func sizeName(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// randomBytes returns n bytes from a seeded ChaCha8 stream.
func randomBytes(n int64, seed uint64) []byte {
	var s [32]byte
	for i := range 8 {
		s[i] = byte(seed >> (8 * i))
	}
	b := make([]byte, n)
	rand.NewChaCha8(s).Read(b)
	return b
}

// newDataset builds the objects of p. Every small (size, concurrency) pair
// gets its own keys, so each pair has a cold pass of its own.
func newDataset(p plan) *dataset {
	const poolSize = 64 << 20
	pool := randomBytes(poolSize, 1)
	d := &dataset{bucket: "loadtest"}
	for _, size := range p.sizes {
		for _, conc := range p.concs {
			s := objectSet{name: sizeName(int64(size)), size: size, conc: conc}
			for i := range p.count {
				// Windows overlap but start at distinct offsets: i*4099
				// mod M is one-to-one for i < M, as the prime 4099 does
				// not divide M (pool size minus 4 KiB or 100 KiB).
				off := (len(d.sets)*p.count + i) * 4099 % (poolSize - size)
				key := fmt.Sprintf("small/%s-c%d/%06d", s.name, conc, i)
				s.objects = append(s.objects, object{key: key, data: pool[off : off+size]})
			}
			d.sets = append(d.sets, s)
		}
	}
	names := []string{"single", "ranged"}
	if p.ranges == 0 {
		names = names[:1]
	}
	for i, name := range names {
		key := fmt.Sprintf("large/%s-%s", sizeName(p.largeSize), name)
		d.large = append(d.large, object{key: key, data: randomBytes(p.largeSize, uint64(100+i))})
	}
	return d
}

// under puts every key of d under prefix.
func (d *dataset) under(prefix string) {
	for i := range d.sets {
		for j := range d.sets[i].objects {
			d.sets[i].objects[j].key = prefix + d.sets[i].objects[j].key
		}
	}
	for i := range d.large {
		d.large[i].key = prefix + d.large[i].key
	}
}

// all returns every object of d.
func (d *dataset) all() []object {
	var out []object
	for _, s := range d.sets {
		out = append(out, s.objects...)
	}
	return append(out, d.large...)
}

// bytes is the size of every object of d together.
func (d *dataset) bytes() int64 {
	var n int64
	for _, o := range d.all() {
		n += int64(len(o.data))
	}
	return n
}

// seed creates the bucket and uploads every object with conc workers.
func (d *dataset) seed(ctx context.Context, cl *minio.Client, conc int) error {
	if err := cl.MakeBucket(ctx, d.bucket, minio.MakeBucketOptions{}); err != nil {
		return fmt.Errorf("make bucket: %w", err)
	}
	return d.upload(ctx, cl, conc)
}

// upload writes every object into the bucket, which exists, with conc
// workers.
func (d *dataset) upload(ctx context.Context, cl *minio.Client, conc int) error {
	objs := d.all()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, conc)
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(len(objs)); i = next.Add(1) - 1 {
				o := objs[i]
				_, err := cl.PutObject(ctx, d.bucket, o.key, bytes.NewReader(o.data), int64(len(o.data)),
					minio.PutObjectOptions{ContentType: "application/octet-stream"})
				if err != nil {
					errs <- fmt.Errorf("seed %s: %w", o.key, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs // nil when no worker failed
}
