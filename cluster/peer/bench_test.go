// What sealing answers costs: the MAC alone per core (a frame's tag from
// its bytes, as an asker checks it, and from a kept hash, as a member
// that sent the chunk before tags it, against HMAC-SHA256), and a whole
// chunk call over loopback, both members in this process, with the CPU
// it took.
package peer

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/granary-dev/granary/store"
)

// benchChunk is the default chunk size of a node.
const benchChunk = 8 << 20

// BenchmarkAnswerMAC: tagging an 8 MiB chunk in frames, one core.
func BenchmarkAnswerMAC(b *testing.B) {
	data := make([]byte, benchChunk)
	frames := func(b *testing.B, tag func(i int, p []byte)) {
		b.SetBytes(benchChunk)
		for b.Loop() {
			for i := 0; i*FrameSize < len(data); i++ {
				tag(i, data[i*FrameSize:(i+1)*FrameSize])
			}
		}
	}
	b.Run("GHASH-tag", func(b *testing.B) { // what an asker checks each frame with
		k := newAnswerKey(newSecretMAC([]byte(testSecret)), "sig")
		frames(b, func(i int, p []byte) { k.frameTag(uint64(i), false, p) })
	})
	b.Run("kept-hash-tag", func(b *testing.B) { // what a member that kept the hashes tags with
		k := newAnswerKey(newSecretMAC([]byte(testSecret)), "sig")
		var h [TagSize]byte
		frames(b, func(i int, _ []byte) { k.maskHash(uint64(i), false, h) })
	})
	b.Run("HMAC-SHA256", func(b *testing.B) {
		var out [sha256.Size]byte
		frames(b, func(i int, p []byte) {
			m := hmac.New(sha256.New, []byte(testSecret))
			m.Write(p)
			m.Sum(out[:0])
		})
	})
	b.Run("key", func(b *testing.B) { // once per call
		k := newSecretMAC([]byte(testSecret))
		for b.Loop() {
			newAnswerKey(k, "sig")
		}
	})
}

// BenchmarkGetChunk: a member reads 8 MiB chunks (and 100 KiB ones) that
// another holds in a tier, into one buffer as a flight does, in plain
// HTTP and over TLS; cpu-ns/op is both members' CPU per chunk.
func BenchmarkGetChunk(b *testing.B) {
	for _, c := range []struct {
		name  string
		start func(testing.TB) *rig
		size  int
	}{
		{"8MiB", plainRig, benchChunk}, {"100KiB", plainRig, 100 << 10},
		{"TLS-8MiB", startTLSRig, benchChunk}, {"TLS-100KiB", startTLSRig, 100 << 10},
	} {
		size := c.size
		b.Run(c.name, func(b *testing.B) {
			r := c.start(b)
			r.be.chunk = benchChunk
			id := store.ChunkID{Bucket: "b", Key: "k", ETag: "e"}
			r.be.chunks[id] = make([]byte, size)
			buf := make([]byte, size)
			req := ChunkRequest{ID: id, Len: int64(size), Chunk: benchChunk}
			b.SetBytes(int64(size))
			cpu0 := cpuTime()
			for b.Loop() {
				rc, err := r.client.GetChunk(context.Background(), r.to, req)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(rc, buf); err != nil {
					b.Fatal(err)
				}
				rc.Close()
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

func plainRig(t testing.TB) *rig { return startRig(t, false) }

// cpuTime is the process's user and system CPU so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
