// Tests of the test datanode through a real TCP listener and the
// hand-rolled client in client_test.go.
package datanode

import (
	"bytes"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	hdfs "github.com/colinmarc/hdfs/protocol/hadoop_hdfs"
	"github.com/golang/protobuf/proto"

	"github.com/granary-dev/granary/internal/goroutines"
	"github.com/granary-dev/granary/internal/hdfstest/blocks"
)

// testServer is a running Serve; stop closes its listener and checks that
// Serve returns nil promptly.
type testServer struct {
	addr  string
	store *blocks.Store
	stop  func()
}

func start(t *testing.T) *testServer {
	t.Helper()
	st, err := blocks.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- Serve(ln, st, t.Logf) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		ln.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not return after the listener closed")
		}
	}
	t.Cleanup(stop)
	return &testServer{addr: ln.Addr().String(), store: st, stop: stop}
}

// putBlock writes data as block id: first packets of the given sizes (a
// size that is not a multiple of 512 leaves the next packet starting
// mid-chunk, as after the v2 client's Flush), a heartbeat after the first
// packet, then 64 KiB packets, then the empty last packet; every ack must
// be SUCCESS with the packet's seqno.
func putBlock(t *testing.T, addr string, id uint64, data []byte, sizes ...int) {
	t.Helper()
	c := dial(t, addr)
	c.sendOp(80, writeOp(id))
	if resp := c.response(); resp.GetStatus() != hdfs.Status_SUCCESS {
		t.Fatalf("write op: %v %q", resp.GetStatus(), resp.GetMessage())
	}
	off, seqno := 0, int64(1)
	for off < len(data) {
		n := 64 << 10
		if len(sizes) > 0 {
			n, sizes = sizes[0], sizes[1:]
		}
		chunk := data[off:min(off+n, len(data))]
		c.sendPacket(int64(off), seqno, false, sums512(chunk), chunk)
		expectAck(t, c, seqno, hdfs.Status_SUCCESS)
		if seqno == 1 {
			c.sendPacket(0, -1, false, nil, nil)
			expectAck(t, c, -1, hdfs.Status_SUCCESS)
		}
		off += len(chunk)
		seqno++
	}
	c.sendPacket(int64(off), seqno, true, nil, nil)
	expectAck(t, c, seqno, hdfs.Status_SUCCESS)
}

func expectAck(t *testing.T, c *testClient, seqno int64, status hdfs.Status) {
	t.Helper()
	ack := c.ack()
	if ack.GetSeqno() != seqno || len(ack.GetReply()) != 1 || ack.GetReply()[0] != status {
		t.Fatalf("ack %d %v, want %d [%v]", ack.GetSeqno(), ack.GetReply(), seqno, status)
	}
}

// getBlock reads [off, off+n) of block id, checking the response, the
// chunk alignment and seqnos of the packets and their checksums, and
// returns the requested bytes.
func getBlock(t *testing.T, addr string, id, size, off, n uint64) []byte {
	t.Helper()
	c := dial(t, addr)
	c.sendOp(81, &hdfs.OpReadBlockProto{
		Header: opHeader(id, size), Offset: proto.Uint64(off), Len: proto.Uint64(n),
	})
	resp := c.response()
	info := resp.GetReadOpChecksumInfo()
	if resp.GetStatus() != hdfs.Status_SUCCESS || info.GetChecksum().GetType() != hdfs.ChecksumTypeProto_CHECKSUM_CRC32C ||
		info.GetChecksum().GetBytesPerChecksum() != 512 {
		t.Fatalf("read op response: %v", resp)
	}
	chunkOff := info.GetChunkOffset()
	if chunkOff != off-off%512 {
		t.Fatalf("chunkOffset %d for offset %d", chunkOff, off)
	}
	var got []byte
	for seqno := int64(0); ; seqno++ {
		hdr, data := c.readPacket(true)
		if hdr.GetSeqno() != seqno || uint64(hdr.GetOffsetInBlock()) != chunkOff+uint64(len(got)) {
			t.Fatalf("packet seqno %d offset %d, want %d and %d", hdr.GetSeqno(), hdr.GetOffsetInBlock(), seqno, chunkOff+uint64(len(got)))
		}
		if hdr.GetLastPacketInBlock() {
			if len(data) != 0 {
				t.Fatalf("last packet carries %d bytes", len(data))
			}
			break
		}
		end := chunkOff + uint64(len(got)+len(data))
		if len(data) == 0 || len(data) > 64<<10 || (len(data)%512 != 0 && end != size) {
			t.Fatalf("data packet of %d bytes ending at %d in a block of %d", len(data), end, size)
		}
		got = append(got, data...)
	}
	c.send(nil, &hdfs.ClientReadStatusProto{Status: hdfs.Status_CHECKSUM_OK.Enum()})
	if uint64(len(got)) < off+n-chunkOff {
		t.Fatalf("got %d bytes from %d, want through %d", len(got), chunkOff, off+n)
	}
	return got[off-chunkOff : off-chunkOff+n]
}

func TestWriteThenRead(t *testing.T) {
	srv := start(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for i, size := range []int{0, 1, 700 << 10} {
		id := uint64(1000 + i)
		data := make([]byte, size)
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		putBlock(t, srv.addr, id, data, 1000, 24, 100)
		if disk, err := os.ReadFile(srv.store.Path(id)); err != nil || !bytes.Equal(disk, data) {
			t.Fatalf("block %d on disk: %d bytes, err %v; want %d bytes", id, len(disk), err, size)
		}
		if _, err := os.Stat(srv.store.TempPath(id)); !os.IsNotExist(err) {
			t.Errorf("temp file of block %d left behind: %v", id, err)
		}
		n := uint64(size)
		ranges := [][2]uint64{{0, n}, {n, 0}}
		if n > 0 {
			ranges = append(ranges, [2]uint64{n - 1, 1})
		}
		if n > 200000 {
			ranges = append(ranges, [2]uint64{1, 1}, [2]uint64{511, 2}, [2]uint64{513, 1000},
				[2]uint64{65535, 70000}, [2]uint64{100001, n - 100001}, [2]uint64{n - 700, 699})
		}
		for _, r := range ranges {
			got := getBlock(t, srv.addr, id, n, r[0], r[1])
			if !bytes.Equal(got, data[r[0]:r[0]+r[1]]) {
				t.Errorf("block %d [%d,+%d): data differs", id, r[0], r[1])
			}
		}
	}
}

// noBlock checks that block id left neither a block nor a temp file.
func noBlock(t *testing.T, st *blocks.Store, id uint64) {
	t.Helper()
	for _, p := range []string{st.Path(id), st.TempPath(id)} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s exists (err %v)", p, err)
		}
	}
}

func TestWriteCorruptChecksumRefused(t *testing.T) {
	srv := start(t)
	c := dial(t, srv.addr)
	c.sendOp(80, writeOp(7))
	if resp := c.response(); resp.GetStatus() != hdfs.Status_SUCCESS {
		t.Fatalf("write op: %v", resp.GetStatus())
	}
	data := bytes.Repeat([]byte("granary!"), 256) // 2 KiB, 4 chunks
	c.sendPacket(0, 1, false, sums512(data), data)
	expectAck(t, c, 1, hdfs.Status_SUCCESS)
	sums := sums512(data)
	sums[9] ^= 0x40 // third chunk
	c.sendPacket(int64(len(data)), 2, false, sums, data)
	expectAck(t, c, 2, hdfs.Status_ERROR_CHECKSUM)
	// The server hangs up after cleaning up, so EOF means it is done.
	if err := c.readMsg(&hdfs.PipelineAckProto{}); err == nil {
		t.Fatal("connection still open after a checksum error")
	}
	noBlock(t, srv.store, 7)
	c2 := dial(t, srv.addr)
	c2.sendOp(81, &hdfs.OpReadBlockProto{Header: opHeader(7, 0), Offset: proto.Uint64(0), Len: proto.Uint64(0)})
	if resp := c2.response(); resp.GetStatus() != hdfs.Status_ERROR {
		t.Errorf("read of refused block: %v", resp.GetStatus())
	}
}

// waitGone polls, bounded, until block id has no temp file: the server
// learns of a disconnect asynchronously.
func waitGone(t *testing.T, st *blocks.Store, id uint64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(st.TempPath(id)); os.IsNotExist(err) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond) // polling interval
	}
	noBlock(t, st, id)
}

func TestWriteDisconnectLeavesNoBlock(t *testing.T) {
	srv := start(t)
	data := bytes.Repeat([]byte{0xa5}, 3000)
	t.Run("between packets", func(t *testing.T) {
		c := dial(t, srv.addr)
		c.sendOp(80, writeOp(21))
		c.response()
		c.sendPacket(0, 1, false, sums512(data), data)
		expectAck(t, c, 1, hdfs.Status_SUCCESS)
		if _, err := os.Stat(srv.store.TempPath(21)); err != nil {
			t.Fatalf("no temp file while writing: %v", err)
		}
		c.conn.Close()
		waitGone(t, srv.store, 21)
	})
	t.Run("mid packet", func(t *testing.T) {
		c := dial(t, srv.addr)
		c.sendOp(80, writeOp(22))
		c.response()
		p := packetBytes(t, 0, 1, false, sums512(data), data)
		if _, err := c.conn.Write(p[:len(p)/2]); err != nil {
			t.Fatal(err)
		}
		c.conn.Close()
		waitGone(t, srv.store, 22)
	})
}

func TestRefusals(t *testing.T) {
	srv := start(t)
	putBlock(t, srv.addr, 5, []byte("hello"))
	cases := []struct {
		name   string
		op     byte
		msg    proto.Message
		status hdfs.Status
		text   string
	}{
		{"missing block", 81, &hdfs.OpReadBlockProto{Header: opHeader(404, 10), Offset: proto.Uint64(0), Len: proto.Uint64(10)}, hdfs.Status_ERROR, "404"},
		{"read past end", 81, &hdfs.OpReadBlockProto{Header: opHeader(5, 5), Offset: proto.Uint64(3), Len: proto.Uint64(3)}, hdfs.Status_ERROR, "don't match"},
		{"existing block", 80, writeOp(5), hdfs.Status_ERROR_EXISTS, "already exists"},
		{"append", 80, func() proto.Message {
			op := writeOp(6)
			op.Stage = hdfs.OpWriteBlockProto_PIPELINE_SETUP_APPEND.Enum()
			return op
		}(), hdfs.Status_ERROR_UNSUPPORTED, "stage"},
		{"block checksum", 85, &hdfs.OpBlockChecksumProto{Header: opHeader(5, 5).BaseHeader}, hdfs.Status_ERROR_UNSUPPORTED, "not supported"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, srv.addr)
			c.sendOp(tc.op, tc.msg)
			resp := c.response()
			if resp.GetStatus() != tc.status || !strings.Contains(resp.GetMessage(), tc.text) {
				t.Errorf("got %v %q, want %v containing %q", resp.GetStatus(), resp.GetMessage(), tc.status, tc.text)
			}
		})
	}
	if data, err := os.ReadFile(srv.store.Path(5)); err != nil || string(data) != "hello" {
		t.Errorf("block 5 after refusals: %q %v", data, err)
	}
	noBlock(t, srv.store, 6)
}

// TestServeShutdown closes the listener with an idle connection and a
// write in progress: Serve must return, the write must leave nothing,
// and no goroutine may be left.
func TestServeShutdown(t *testing.T) {
	before := goroutines.Snapshot()
	srv := start(t)
	idle := dial(t, srv.addr)
	w := dial(t, srv.addr)
	w.sendOp(80, writeOp(9))
	w.response()
	w.sendPacket(0, 1, false, sums512([]byte("abc")), []byte("abc"))
	expectAck(t, w, 1, hdfs.Status_SUCCESS)
	srv.stop()
	noBlock(t, srv.store, 9)
	idle.conn.Close()
	w.conn.Close()
	if err := goroutines.Leaked(before, 5*time.Second); err != nil {
		t.Errorf("after shutdown: %v", err)
	}
}
