// A warm body RAM keeps in its arena leaves by sendfile, from its place
// in the arena's file, and so does a streamed body of several chunks;
// over TLS it is copied. Either way the bytes are the object's and every
// lease on them ends. A disk hit RAM does not keep leaves the GET lane
// by sendfile from its segment, unread.
package api

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/internal/membody"
	"github.com/granary-dev/granary/internal/poll"
	"github.com/granary-dev/granary/store/disk"
	"github.com/granary-dev/granary/store/ram"
)

func TestWarmBodySentFromFile(t *testing.T) {
	origin, root := backends[0].open(t)
	tier := sendableRAM(t)
	e := newEnvOver(t, gateway.Options{Origin: origin, RAM: tier}, root, nil)
	checkArenaBodies(t, e, tier, true)
}

func TestWarmBodyOverTLSIsCopied(t *testing.T) {
	tier := sendableRAM(t)
	e, _ := newTLSEnvRAM(t, tier)
	checkArenaBodies(t, e, tier, false)
}

func sendableRAM(t *testing.T) *ram.Tier {
	tier := ram.New(ram.Options{Capacity: 64 << 20, Sendable: true})
	if err := tier.Sendable(); err != nil {
		t.Fatalf("no arena: %v", err)
	}
	return tier
}

// checkArenaBodies reads a warm object of RAM's arena whole, a range of
// it, two ranges too small to be worth a sendfile (copied) and its head,
// and checks the bytes, which were sent from the arena's file if
// fromFile, and that every lease ended.
func checkArenaBodies(t *testing.T, e *env, tier *ram.Tier, fromFile bool) {
	t.Helper()
	bucket := e.makeBucket(t, "arena")
	body := make([]byte, 300_000)
	for i := range body {
		body[i] = byte(i*7 + i/4096)
	}
	e.put(t, bucket, "sample", body, minio.PutObjectOptions{})
	if _, err := e.get(t, bucket, "sample", minio.GetObjectOptions{}); err != nil { // fills RAM
		t.Fatal(err)
	}
	for _, c := range []struct {
		start, end int64 // inclusive; -1: the whole object
		copied     bool  // small enough to be copied anyway
	}{{-1, -1, false}, {50_000, 249_999, false}, {100, 100_099, true}, {100, 20_099, true}} {
		opts, want := rangeOf(body, c.start, c.end)
		before := membody.FileBytes()
		got, err := e.get(t, bucket, "sample", opts)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("bytes %d-%d: read %d bytes (%v), not the object's %d", c.start, c.end, len(got), err, len(want))
		}
		if fromFile && !c.copied {
			// The server counts the bytes once sendfile returns, which may
			// be after the client has them all.
			poll.Until(t, fmt.Sprintf("bytes %d-%d counted as sent from the arena's file", c.start, c.end),
				func() bool { return membody.FileBytes()-before >= int64(len(want)) })
		}
	}
	if _, err := e.client.StatObject(t.Context(), bucket, "sample", minio.StatObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "every lease on RAM's chunks released", func() bool { return tier.Leases() == 0 })
	if fromFile {
		_, m := e.do(t, rawRequest{method: http.MethodGet, path: "/metrics", unsigned: true})
		const name = "granary_body_bytes_sendfile_total "
		i := bytes.Index(m, []byte("\n"+name))
		var sent float64
		if i >= 0 {
			fmt.Sscan(string(m[i+1+len(name):]), &sent) //nolint:errcheck // a missing figure reads 0
		}
		if sent < float64(len(body)) {
			t.Fatalf("%s= %v after bodies sent from the file", name, sent)
		}
	}
}

// TestStreamedBodySentFromFile: an object of several chunks RAM keeps
// in its arena, whole and a range across chunks, streams from the
// arena's file by sendfile, through fasthttp (the connection that wrote
// it) and through the GET lane (a new one). The bytes are the object's.
func TestStreamedBodySentFromFile(t *testing.T) {
	origin, root := backends[0].open(t)
	tier := sendableRAM(t)
	const chunk = 256 << 10
	e := newEnvOver(t, gateway.Options{Origin: origin, RAM: tier, ChunkSize: chunk}, root, nil)
	bucket := e.makeBucket(t, "streamed")
	body := make([]byte, 4*chunk+100_000) // every chunk an arena one
	for i := range body {
		body[i] = byte(i*11 + i/4096)
	}
	e.put(t, bucket, "shard", body, minio.PutObjectOptions{})
	if _, err := e.get(t, bucket, "shard", minio.GetObjectOptions{}); err != nil { // fills RAM
		t.Fatal(err)
	}
	for _, cl := range []*minio.Client{e.client, e.newClient(t, &http.Transport{})} {
		for _, r := range [][2]int64{{-1, -1}, {100, 3*chunk + 99_999}} { // no span under membody.FileMin
			opts, want := rangeOf(body, r[0], r[1])
			before := membody.FileBytes()
			got, err := readAll(cl.GetObject(t.Context(), bucket, "shard", opts))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("bytes %d-%d: read %d bytes (%v), not the object's %d", r[0], r[1], len(got), err, len(want))
			}
			poll.Until(t, fmt.Sprintf("bytes %d-%d counted as sent from the arena's file", r[0], r[1]),
				func() bool { return membody.FileBytes()-before >= int64(len(want)) })
		}
	}
	poll.Until(t, "every lease on RAM's chunks released", func() bool { return tier.Leases() == 0 })
}

// TestDiskHitSentFromFile: with no RAM tier, a warm object of the disk
// tier, whole and a range of it, leaves the lane from its segment by
// sendfile; a part too small for that is read and copied. The bytes are
// the object's each time.
func TestDiskHitSentFromFile(t *testing.T) {
	origin, root := backends[0].open(t)
	tier, err := disk.Open(disk.Options{Dir: t.TempDir(), Capacity: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tier.Close() })
	e := newEnvOver(t, gateway.Options{Origin: origin, Disk: tier}, root, nil)
	bucket := e.makeBucket(t, "diskfile")
	body := make([]byte, 200_000)
	for i := range body {
		body[i] = byte(i*13 + i/4096)
	}
	info := e.put(t, bucket, "sample", body, minio.PutObjectOptions{})
	if _, err := e.get(t, bucket, "sample", minio.GetObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the object on the disk tier", func() bool { return tier.Held(bucket, "sample", info.ETag) == int64(len(body)) })
	// A client of its own: e.client's connection wrote, and stays with
	// fasthttp, which reads a disk hit as before.
	reader := e.newClient(t, &http.Transport{})
	for _, c := range []struct {
		start, end int64 // inclusive; -1: the whole object
		fromFile   bool
	}{{-1, -1, true}, {10_000, 109_999, true}, {100, 20_099, false}} {
		opts, want := rangeOf(body, c.start, c.end)
		before := membody.FileBytes()
		got, err := readAll(reader.GetObject(t.Context(), bucket, "sample", opts))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("bytes %d-%d: read %d bytes (%v), not the object's %d", c.start, c.end, len(got), err, len(want))
		}
		if c.fromFile {
			poll.Until(t, fmt.Sprintf("bytes %d-%d counted as sent from the segment", c.start, c.end),
				func() bool { return membody.FileBytes()-before >= int64(len(want)) })
		} else if sent := membody.FileBytes() - before; sent != 0 {
			t.Fatalf("bytes %d-%d: %d bytes sent from a file, want none", c.start, c.end, sent)
		}
	}
}

// readAll reads a minio-go object whole and closes it.
func readAll(obj *minio.Object, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	return io.ReadAll(obj)
}

// rangeOf is a GET of bytes start to end (inclusive) of body, and those
// bytes; the whole body if start is -1.
func rangeOf(body []byte, start, end int64) (minio.GetObjectOptions, []byte) {
	var opts minio.GetObjectOptions
	if start < 0 {
		return opts, body
	}
	opts.SetRange(start, end) //nolint:errcheck // a valid range
	return opts, body[start : end+1]
}
