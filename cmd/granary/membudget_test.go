// Clients that send a GET and then read nothing cannot grow a node's
// memory past its --ram: a real `granary serve` process (built without
// the race detector, whose shadow memory would swamp what is measured)
// in front of a real MinIO, with real stalled TCP connections.
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/internal/poll"
	"github.com/granary-dev/granary/internal/procmem"
)

// Stalled readers against a node with a small memory budget.
const (
	stallRAM     = 64 << 20 // --ram
	stallChunk   = 2 << 20  // --chunk-size
	stallObjects = 16
	stallSize    = 16 << 20 // bytes per object
	stallConns   = 200
	// stallGC is the Go memory limit the node runs under (GOMEMLIMIT,
	// which serve honours in place of --ram plus gcHeadroom): the
	// collector keeps garbage close to it, so RSS shows what the node
	// holds rather than garbage awaiting collection.
	stallGC = stallRAM + 32<<20
	// runtimeAllowance is what RSS may hold past the Go memory limit:
	// memory that is not heap (the binary's pages, goroutine stacks,
	// bbolt's map, the runtime's own).
	runtimeAllowance = 64 << 20
	stallLimit       = stallGC + runtimeAllowance // the peak RSS allowed
)

// TestStalledReadersStayWithinTheMemoryBudget: 200 clients that each send
// a GET for data the node has cached and never read its answer, then 40
// more for data it has not. Without a working-memory budget every reader
// held its read-ahead (five chunks read from disk) until the write
// timeout: 1.6 GiB here, against about 65 MiB with it.
func TestStalledReadersStayWithinTheMemoryBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds granary and moves 320 MiB")
	}
	node, cl, origin := startMeasuredNode(t)
	warm := putPatterned(t, origin, "stall", stallObjects, stallSize)
	cold := putPatterned(t, origin, "cold", 4, stallSize)
	cacheAll(t, node, cl, "stall", warm)
	limit := int64(stallLimit)
	// Each client reads its own part of an object, one of eight offsets,
	// so readers of one object do not share the chunks they hold.
	conns := stallGets(t, node, cl, "stall", warm, stallConns)
	rss, hwm := procMemory(t, node.pid)
	slowDowns := metric(t, node.addr, "granary_requests_total", `op="GetObject"`, `code="503"`)
	t.Logf("%d stalled GETs of cached data: RSS %d MiB, peak %d MiB (limit %d MiB); %v refused (503)",
		stallConns, rss>>20, hwm>>20, limit>>20, slowDowns)
	if hwm > limit {
		t.Fatalf("peak RSS %d MiB with %d stalled readers, past --ram %d MiB plus %d MiB for the runtime",
			hwm>>20, stallConns, stallRAM>>20, (limit-stallRAM)>>20)
	}
	if slowDowns == 0 {
		t.Fatal("no GET was refused: every stalled reader found memory, or its refusal was not a 503")
	}
	closeAll(conns)
	poll.Until(t, "the stalled readers to be closed", func() bool { return metric(t, node.addr, "granary_reads_streaming") == 0 })
	// Data the node has not cached: flights from the origin, held for
	// readers that do not take them.
	conns = stallGets(t, node, cl, "cold", cold, 40)
	defer closeAll(conns)
	rss, hwm = procMemory(t, node.pid)
	t.Logf("40 stalled GETs of uncached data: RSS %d MiB, peak %d MiB", rss>>20, hwm>>20)
	if hwm > limit {
		t.Fatalf("peak RSS %d MiB with 40 stalled readers of uncached data, past the limit %d MiB", hwm>>20, limit>>20)
	}
	// The node still answers: a refused client retries once readers go
	// and gets every byte.
	closeAll(conns)
	poll.Until(t, "the stalled readers to be closed", func() bool { return metric(t, node.addr, "granary_reads_streaming") == 0 })
	obj, err := cl.GetObject(context.Background(), "cold", cold[0], minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	if n, err := io.Copy(io.Discard, obj); err != nil || n != stallSize {
		t.Fatalf("read after the stall: %d bytes, %v", n, err)
	}
}

// cacheAll reads every chunk of keys through the node, one chunk per
// request, until a pass over them reads nothing from the origin (a pass
// can lose chunks on their way to a full disk queue).
func cacheAll(t *testing.T, node measuredNode, cl *minio.Client, bucket string, keys []string) {
	t.Helper()
	for pass := 0; ; pass++ {
		before := metric(t, node.addr, "granary_origin_requests_total", `op="get"`)
		for _, key := range keys {
			for off := int64(0); off < stallSize; off += stallChunk {
				opts := minio.GetObjectOptions{}
				if err := opts.SetRange(off, off+stallChunk-1); err != nil {
					t.Fatal(err)
				}
				obj, err := cl.GetObject(context.Background(), bucket, key, opts)
				if err != nil {
					t.Fatal(err)
				}
				_, err = io.Copy(io.Discard, obj)
				obj.Close()
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		if metric(t, node.addr, "granary_origin_requests_total", `op="get"`) == before {
			return
		}
		if pass == 10 {
			t.Fatalf("after %d passes the node still reads %s from the origin", pass, bucket)
		}
	}
}

// measuredNode is a `granary serve` process of the real binary.
type measuredNode struct {
	addr   string
	pid    int
	getenv Getenv
}

// startMeasuredNode starts MinIO and a node of the real binary in front
// of it, with the test's small memory budget; it returns the node, a
// client of the node and one of the origin.
func startMeasuredNode(t *testing.T) (measuredNode, *minio.Client, *minio.Client) {
	t.Helper()
	mio := miniotest.StartT(t)
	bin := buildGranary(t)
	env := map[string]string{
		"GRANARY_ACCESS_KEY": "stall-access", "GRANARY_SECRET_KEY": "stall-secret",
		"GRANARY_ORIGIN_ACCESS_KEY": mio.AccessKey, "GRANARY_ORIGIN_SECRET_KEY": mio.SecretKey,
		"GRANARY_DATA_DIR": t.TempDir(), "GOMEMLIMIT": strconv.Itoa(stallGC),
	}
	args := []string{"serve", "--listen", "127.0.0.1:0", "--origin", "s3://" + mio.Endpoint + "?secure=false",
		"--ram", strconv.Itoa(stallRAM) + "B", "--disk", "1GiB", "--chunk-size", strconv.Itoa(stallChunk) + "B"}
	c := spawnChild(t, func(string, ...string) *exec.Cmd { return exec.Command(bin, args...) }, nil, env)
	node := measuredNode{addr: c.addr, pid: c.cmd.Process.Pid, getenv: envMap(env)}
	cf := clientFlags{endpoint: "http://" + c.addr}
	cl, err := cf.Client(node.getenv)
	if err != nil {
		t.Fatal(err)
	}
	origin, err := newS3Client(mio.URL(), envMap(map[string]string{"GRANARY_ACCESS_KEY": mio.AccessKey, "GRANARY_SECRET_KEY": mio.SecretKey}))
	if err != nil {
		t.Fatal(err)
	}
	return node, cl, origin
}

// buildGranary builds the granary binary, without the race detector,
// into the test's temporary directory.
func buildGranary(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "granary")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/granary-dev/granary/cmd/granary").CombinedOutput()
	if err != nil {
		t.Fatalf("go build granary: %v\n%s", err, out)
	}
	return bin
}

// patterned is an endless reader of bytes that depend on seed and position.
type patterned struct {
	seed byte
	off  int64
}

func (p *patterned) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = p.seed ^ byte(p.off>>8) ^ byte(p.off)
		p.off++
	}
	return len(b), nil
}

// putPatterned writes n objects of size bytes to bucket (created) at the
// origin, four at a time, and returns their keys.
func putPatterned(t *testing.T, origin *minio.Client, bucket string, n int, size int64) []string {
	t.Helper()
	ctx := context.Background()
	if err := origin.MakeBucket(ctx, bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, n)
	errs := make(chan error, n)
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i := range keys {
		keys[i] = fmt.Sprintf("shard-%03d", i)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			body := io.LimitReader(&patterned{seed: byte(i)}, size)
			_, err := origin.PutObject(ctx, bucket, keys[i], body, size, minio.PutObjectOptions{DisableMultipart: true})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// presign returns a presigned GET URL of bucket/key on the node.
func presign(t *testing.T, cl *minio.Client, bucket, key string) *url.URL {
	t.Helper()
	u, err := cl.PresignedGetObject(context.Background(), bucket, key, time.Hour, url.Values{})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// stallGets opens n connections, each with a small receive buffer, that
// send a presigned GET of one of keys, from one of eight chunk offsets on,
// and never read the answer; it returns once the node answered each or
// streams to it, and its readers stopped taking chunks.
func stallGets(t *testing.T, node measuredNode, cl *minio.Client, bucket string, keys []string, n int) []net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: time.Minute, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	gets := func() float64 { return metric(t, node.addr, "granary_requests_total", `op="GetObject"`) }
	before := gets()
	conns := make([]net.Conn, 0, n)
	for i := range n {
		u := presign(t, cl, bucket, keys[i%len(keys)])
		c, err := d.Dial("tcp", node.addr)
		if err != nil {
			closeAll(conns)
			t.Fatal(err)
		}
		conns = append(conns, c)
		off := int64(i/len(keys)%8) * stallChunk
		req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nRange: bytes=%d-\r\n\r\n", u.RequestURI(), u.Host, off)
		if _, err := io.WriteString(c, req); err != nil {
			closeAll(conns)
			t.Fatal(err)
		}
	}
	// Answered (a 503, or a short rest sent whole) or streaming.
	poll.Until(t, "the node to take every GET", func() bool {
		return gets()-before+metric(t, node.addr, "granary_reads_streaming") >= float64(n)
	})
	settle(t, node, stallLimit)
	return conns
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		c.Close()
	}
}

// settle waits until the node's readers stop looking up chunks (the
// cache hits, each a chunk a reader took, stay the same over ten polls),
// or its peak RSS passed limit already.
func settle(t *testing.T, node measuredNode, limit int64) {
	t.Helper()
	last, same := -1.0, 0
	poll.Until(t, "the readers to stop taking chunks", func() bool {
		if _, hwm := procMemory(t, node.pid); hwm > limit {
			return true
		}
		now := metric(t, node.addr, "granary_cache_hits_total")
		if now != last {
			last, same = now, 0
		}
		same++
		return same >= 10
	})
}

// procMemory returns a process's resident memory now and at its peak
// (VmRSS, VmHWM), in bytes, each with the pages of its memory files
// added (the RAM tier's arena, which RSS shows only where it is mapped):
// an upper bound, as a mapped page counts twice.
func procMemory(t *testing.T, pid int) (rss, hwm int64) {
	t.Helper()
	files, err := procmem.MemfdBytes(pid)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { rss, hwm = rss+files, hwm+files }()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || (fields[0] != "VmRSS:" && fields[0] != "VmHWM:") {
			continue
		}
		kb, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if fields[0] == "VmRSS:" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	return rss, hwm
}
