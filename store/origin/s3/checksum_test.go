package s3

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/granary-dev/granary/internal/faultproxy"
	"github.com/granary-dev/granary/store"
)

// putRecorder notes the payload mode of every PUT the origin sends, and
// with flip set changes one byte of each PUT's body on the way.
type putRecorder struct {
	rt   http.RoundTripper
	flip bool
	mu   sync.Mutex
	seen []string // X-Amz-Content-Sha256, then X-Amz-Trailer, of each PUT
}

func (p *putRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPut && r.Body != nil {
		p.mu.Lock()
		mode := r.Header.Get("X-Amz-Content-Sha256") + " " + r.Header.Get("X-Amz-Trailer")
		if crc := r.Header.Get(crc32cTrailer); crc != "" {
			mode += "header " + crc
		}
		p.seen = append(p.seen, mode)
		p.mu.Unlock()
		if p.flip {
			r.Body = faultproxy.FlipBody(r.Body, 1000)
		}
	}
	return p.rt.RoundTrip(r)
}

func (p *putRecorder) puts() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

func crcOrigin(t *testing.T, flip bool) (*Origin, *putRecorder, string) {
	t.Helper()
	rec := &putRecorder{rt: http.DefaultTransport.(*http.Transport).Clone(), flip: flip}
	o := newOrigin(t, Options{PartSize: 5 << 20, MaxSinglePut: 6 << 20, PayloadCRC32C: true, Transport: rec})
	bucket := fmt.Sprintf("crc-%d", time.Now().UnixNano())
	if err := o.MakeBucket(context.Background(), bucket); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, key := range []string{"single", "known", "unknown", "unknown small", "client parts"} {
			o.Delete(context.Background(), bucket, key)
		}
		o.RemoveBucket(context.Background(), bucket)
	})
	return o, rec, bucket
}

// TestPayloadCRC32C uploads every way the origin uploads (one PUT, parts
// of a known and of an unknown size, a client's parts) with bodies
// checked by a trailing CRC32C, and reads each back whole.
func TestPayloadCRC32C(t *testing.T) {
	o, rec, bucket := crcOrigin(t, false)
	ctx := context.Background()
	data := make([]byte, 12<<20+123)
	for i := range data {
		data[i] = byte(rand.Uint32())
	}
	cases := []struct {
		name string
		put  func(key string) error
		size int
	}{
		{"single", func(key string) error {
			_, err := o.Put(ctx, bucket, key, bytes.NewReader(data[:3<<20]), 3<<20, store.ObjectMeta{})
			return err
		}, 3 << 20},
		{"known", func(key string) error {
			_, err := o.Put(ctx, bucket, key, bytes.NewReader(data), int64(len(data)), store.ObjectMeta{})
			return err
		}, len(data)},
		{"unknown", func(key string) error {
			_, err := o.Put(ctx, bucket, key, io.MultiReader(bytes.NewReader(data)), -1, store.ObjectMeta{})
			return err
		}, len(data)},
		{"unknown small", func(key string) error {
			_, err := o.Put(ctx, bucket, key, io.MultiReader(bytes.NewReader(data[:3<<20])), -1, store.ObjectMeta{})
			return err
		}, 3 << 20},
		{"client parts", func(key string) error {
			id, err := o.NewUpload(ctx, bucket, key, store.ObjectMeta{})
			if err != nil {
				return err
			}
			var parts []store.CompletePart
			for i, off := 1, 0; off < len(data); i, off = i+1, off+5<<20 {
				end := min(off+5<<20, len(data))
				p, err := o.PutPart(ctx, bucket, key, id, i, bytes.NewReader(data[off:end]), int64(end-off))
				if err != nil {
					return err
				}
				parts = append(parts, store.CompletePart{Number: i, ETag: p.ETag})
			}
			_, err = o.CompleteUpload(ctx, bucket, key, id, parts)
			return err
		}, len(data)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(rec.puts())
			if err := c.put(c.name); err != nil {
				t.Fatal(err)
			}
			want := "STREAMING-UNSIGNED-PAYLOAD-TRAILER x-amz-checksum-crc32c"
			if c.name == "unknown small" { // held in memory: the CRC goes first
				want = "UNSIGNED-PAYLOAD header " + base64.StdEncoding.EncodeToString(
					binary.BigEndian.AppendUint32(nil, crc32.Checksum(data[:c.size], castagnoli)))
			}
			for _, p := range rec.puts()[before:] {
				if p != want {
					t.Errorf("a PUT went as %q, not %q", p, want)
				}
			}
			if len(rec.puts()) == before {
				t.Fatal("no PUT seen")
			}
			rc, _, err := o.Get(ctx, bucket, c.name, store.ReadRange{Length: -1})
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || !bytes.Equal(got, data[:c.size]) {
				t.Fatalf("read back %d bytes (err %v), not the %d put", len(got), err, c.size)
			}
		})
	}
}

// TestPayloadCRC32CRefusesChangedBody changes a byte of each upload on
// its way to the origin: the origin refuses it, and no object appears.
func TestPayloadCRC32CRefusesChangedBody(t *testing.T) {
	o, rec, bucket := crcOrigin(t, true)
	ctx := context.Background()
	data := bytes.Repeat([]byte("granary "), 8<<20/8)
	// One PUT, parts, and one PUT of a body of unknown size (its CRC in a header).
	for _, size := range []int{3 << 20, len(data), -1} {
		key := fmt.Sprintf("changed-%d", size)
		body := io.MultiReader(bytes.NewReader(data[:max(size, 1<<20)]))
		if _, err := o.Put(ctx, bucket, key, body, int64(size), store.ObjectMeta{}); err == nil {
			t.Fatalf("a %d-byte body changed on the way was stored", size)
		}
		if _, err := o.Stat(ctx, bucket, key); !errors.Is(err, store.ErrNoSuchKey) {
			t.Fatalf("after a refused upload, Stat says %v, not not found", err)
		}
	}
	if len(rec.puts()) < 3 {
		t.Fatalf("%d PUTs seen, want one per upload at least", len(rec.puts()))
	}
}

// TestCRCBodyRewinds reads part of a checksummed body, rewinds it as
// minio-go does before it tries again, and reads it whole: the trailer
// is the CRC of the body, not of every byte read.
func TestCRCBodyRewinds(t *testing.T) {
	o := &Origin{opts: Options{PayloadCRC32C: true}}
	data := []byte(strings.Repeat("checkpoint", 1000))
	body, opts := o.partBody(bytes.NewReader(data))
	if _, err := io.ReadFull(body, make([]byte, 777)); err != nil {
		t.Fatal(err)
	}
	s, ok := body.(io.Seeker)
	if !ok {
		t.Fatal("a body over a bytes.Reader cannot rewind")
	}
	if _, err := s.Seek(10, io.SeekStart); err == nil {
		t.Fatal("a seek into the body was taken")
	}
	if _, err := s.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(body); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("after rewinding read %d bytes (%v)", len(got), err)
	}
	want := base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, crc32.Checksum(data, castagnoli)))
	if got := opts.Trailer.Get(crc32cTrailer); got != want {
		t.Fatalf("trailer %q, want %q", got, want)
	}
	if plain, _ := o.partBody(io.MultiReader(bytes.NewReader(data))); isSeeker(plain) {
		t.Fatal("a body that cannot seek became a seeker")
	}
}

func isSeeker(r io.Reader) bool {
	_, ok := r.(io.Seeker)
	return ok
}

// TestPayloadCRC32CRefusedNamesTheSetting: an origin that does not take
// trailing checksums refuses the upload; the error says which setting
// to change, and a signed upload to it works.
func TestPayloadCRC32CRefusedNamesTheSetting(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if strings.Contains(r.Header.Get("X-Amz-Content-Sha256"), "TRAILER") {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusNotImplemented)
			io.WriteString(w, `<Error><Code>NotImplemented</Code><Message>trailing checksums are not supported</Message></Error>`)
			return
		}
		w.Header().Set("ETag", `"d41d8cd98f00b204e9800998ecf8427e"`)
	}))
	defer srv.Close()
	for _, crc := range []bool{true, false} {
		o := newOrigin(t, Options{Endpoint: strings.TrimPrefix(srv.URL, "http://"), AccessKey: "k", SecretKey: "secretkey",
			PayloadCRC32C: crc, MaxAttempts: 1})
		_, err := o.Put(context.Background(), "bucket", "key", strings.NewReader("some bytes"), 10, store.ObjectMeta{})
		if got := err != nil && strings.Contains(err.Error(), "payload=signed"); got != crc {
			t.Errorf("payload crc32c %v: Put error %v", crc, err)
		}
		if !crc && err != nil {
			t.Errorf("a signed upload failed: %v", err)
		}
	}
}
