// `bench gen`: writes the objects a Layout describes, filled with
// pseudo-random bytes, then the manifest that marks the set complete.
package bench

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
)

// Counters are running totals a caller may read while a run goes on (the
// progress line); every field only grows during a run.
type Counters struct {
	Objects atomic.Int64 // objects written (gen, ckpt) or read (ckpt)
	Samples atomic.Int64 // samples read (train)
	Bytes   atomic.Int64 // bytes written or read
	Compute atomic.Int64 // nanoseconds of simulated compute, over every accelerator (train)
}

// filler is 4 MiB of pseudo-random bytes every generated object is cut
// from, at an offset of its own, so objects differ without the cost of
// drawing every byte.
var filler = sync.OnceValue(func() []byte {
	b := make([]byte, 4<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i+8 <= len(b); i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
})

// fillReader yields n bytes of filler, starting at a seed-chosen offset.
type fillReader struct {
	off, left int64
}

func newFillReader(seed, n int64) *fillReader {
	return &fillReader{off: (seed * 4099) % int64(len(filler())), left: n}
}

func (r *fillReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	f := filler()
	p = p[:min(int64(len(p)), r.left)]
	n := copy(p, f[r.off:])
	r.off = (r.off + int64(n)) % int64(len(f))
	r.left -= int64(n)
	return n, nil
}

// Prefix normalises a data set prefix: no leading slash, a trailing one
// unless empty.
func Prefix(p string) string {
	p = strings.TrimLeft(p, "/")
	if p != "" && !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p
}

// Gen writes the data set o describes under prefix, o.Writers objects at
// a time, and then its manifest. c, if not nil, counts what is written.
func Gen(ctx context.Context, st Store, prefix string, o GenOptions, c *Counters) (Manifest, error) {
	o, err := o.normalise()
	if err != nil {
		return Manifest{}, err
	}
	m, err := Layout(o)
	if err != nil {
		return m, err
	}
	if c == nil {
		c = new(Counters)
	}
	prefix = Prefix(prefix)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Writers)
	for i, f := range m.Files {
		g.Go(func() error {
			size := f.Size()
			if err := st.Put(gctx, prefix+f.Key, newFillReader(int64(i), size), size); err != nil {
				return err
			}
			c.Objects.Add(1)
			c.Bytes.Add(size)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return m, err
	}
	b, err := json.Marshal(m)
	if err != nil {
		return m, err
	}
	return m, st.Put(ctx, prefix+ManifestName, strings.NewReader(string(b)), int64(len(b)))
}

// LoadManifest reads the manifest of the data set under prefix.
func LoadManifest(ctx context.Context, st Store, prefix string) (Manifest, error) {
	b, err := st.Fetch(ctx, Prefix(prefix)+ManifestName)
	if err != nil {
		return Manifest{}, err
	}
	return ParseManifest(b)
}
