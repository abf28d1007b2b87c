// A hand-rolled data transfer client for the datanode tests. It frames
// everything itself, byte by byte as colinmarc/hdfs/v2's internal/transfer
// does (it cannot import v2: see the package doc), rather than reuse the
// server's helpers, so a framing bug on one side is not mirrored on the other.
package datanode

import (
	"bufio"
	"encoding/binary"
	"hash/crc32"
	"io"
	"net"
	"testing"
	"time"

	hdfs "github.com/colinmarc/hdfs/protocol/hadoop_hdfs"
	"github.com/golang/protobuf/proto"
)

// testClient is one connection to the datanode under test.
type testClient struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func dial(t *testing.T, addr string) *testClient {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	t.Cleanup(func() { conn.Close() })
	return &testClient{t: t, conn: conn, r: bufio.NewReader(conn)}
}

// sendOp writes version 28, the opcode and the delimited message.
func (c *testClient) sendOp(op byte, m proto.Message) {
	c.t.Helper()
	c.send([]byte{0x00, 0x1c, op}, m)
}

// send writes prefix, then m varint-delimited.
func (c *testClient) send(prefix []byte, m proto.Message) {
	c.t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		c.t.Fatal(err)
	}
	buf := append(prefix, binary.AppendUvarint(nil, uint64(len(b)))...)
	if _, err := c.conn.Write(append(buf, b...)); err != nil {
		c.t.Fatal(err)
	}
}

// readMsg reads one varint-delimited message into m.
func (c *testClient) readMsg(m proto.Message) error {
	n, err := binary.ReadUvarint(c.r)
	if err != nil {
		return err
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(c.r, b); err != nil {
		return err
	}
	return proto.Unmarshal(b, m)
}

// response reads the BlockOpResponseProto, which the v2 client reads with
// a first read of exactly 5 bytes, so it must not be shorter.
func (c *testClient) response() *hdfs.BlockOpResponseProto {
	c.t.Helper()
	resp := &hdfs.BlockOpResponseProto{}
	if err := c.readMsg(resp); err != nil {
		c.t.Fatalf("reading op response: %v", err)
	}
	if b, _ := proto.Marshal(resp); len(b)+1 < 5 {
		c.t.Errorf("op response is %d bytes, the v2 client needs at least 5", len(b)+1)
	}
	return resp
}

// ack reads one PipelineAckProto and checks it is at least 5 bytes long.
func (c *testClient) ack() *hdfs.PipelineAckProto {
	c.t.Helper()
	ack := &hdfs.PipelineAckProto{}
	if err := c.readMsg(ack); err != nil {
		c.t.Fatalf("reading ack: %v", err)
	}
	if b, _ := proto.Marshal(ack); len(b)+1 < 5 {
		c.t.Errorf("ack is %d bytes, the v2 client needs at least 5", len(b)+1)
	}
	return ack
}

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// sums512 is the CRC32C of each 512-byte chunk of data, big-endian.
func sums512(data []byte) []byte {
	var out []byte
	for off := 0; off < len(data); off += 512 {
		out = binary.BigEndian.AppendUint32(out, crc32.Checksum(data[off:min(off+512, len(data))], crc32c))
	}
	return out
}

// packetBytes frames a packet as the v2 client does.
func packetBytes(t *testing.T, off, seqno int64, last bool, sums, data []byte) []byte {
	hb, err := proto.Marshal(&hdfs.PacketHeaderProto{
		OffsetInBlock:     proto.Int64(off),
		Seqno:             proto.Int64(seqno),
		LastPacketInBlock: proto.Bool(last),
		DataLen:           proto.Int32(int32(len(data))),
	})
	if err != nil {
		t.Fatal(err)
	}
	b := binary.BigEndian.AppendUint32(nil, uint32(len(data)+len(sums)+4))
	b = binary.BigEndian.AppendUint16(b, uint16(len(hb)))
	b = append(append(append(b, hb...), sums...), data...)
	return b
}

func (c *testClient) sendPacket(off, seqno int64, last bool, sums, data []byte) {
	c.t.Helper()
	if _, err := c.conn.Write(packetBytes(c.t, off, seqno, last, sums, data)); err != nil {
		c.t.Fatal(err)
	}
}

// writeOp is the OpWriteBlockProto the v2 client sends for a new block.
func writeOp(id uint64) *hdfs.OpWriteBlockProto {
	return &hdfs.OpWriteBlockProto{
		Header:                opHeader(id, 0),
		Stage:                 hdfs.OpWriteBlockProto_PIPELINE_SETUP_CREATE.Enum(),
		PipelineSize:          proto.Uint32(0),
		MinBytesRcvd:          proto.Uint64(0),
		MaxBytesRcvd:          proto.Uint64(0),
		LatestGenerationStamp: proto.Uint64(0),
		RequestedChecksum: &hdfs.ChecksumProto{
			Type:             hdfs.ChecksumTypeProto_CHECKSUM_CRC32C.Enum(),
			BytesPerChecksum: proto.Uint32(512),
		},
	}
}

func opHeader(id, numBytes uint64) *hdfs.ClientOperationHeaderProto {
	return &hdfs.ClientOperationHeaderProto{
		BaseHeader: &hdfs.BaseHeaderProto{Block: &hdfs.ExtendedBlockProto{
			PoolId:          proto.String("BP-test"),
			BlockId:         proto.Uint64(id),
			GenerationStamp: proto.Uint64(1001),
			NumBytes:        proto.Uint64(numBytes),
		}},
		ClientName: proto.String("datanode-test"),
	}
}

// readPacket reads one packet and checks its length fields and, with
// CRC32C sums, every chunk's checksum.
func (c *testClient) readPacket(withSums bool) (*hdfs.PacketHeaderProto, []byte) {
	c.t.Helper()
	var pre [6]byte
	if _, err := io.ReadFull(c.r, pre[:]); err != nil {
		c.t.Fatalf("reading packet: %v", err)
	}
	hb := make([]byte, binary.BigEndian.Uint16(pre[4:]))
	if _, err := io.ReadFull(c.r, hb); err != nil {
		c.t.Fatal(err)
	}
	hdr := &hdfs.PacketHeaderProto{}
	if err := proto.Unmarshal(hb, hdr); err != nil {
		c.t.Fatal(err)
	}
	n := int(hdr.GetDataLen())
	sumLen := 0
	if withSums {
		sumLen = (n + 511) / 512 * 4
	}
	if got := int(binary.BigEndian.Uint32(pre[:4])); got != 4+sumLen+n {
		c.t.Fatalf("packet length field %d, want %d", got, 4+sumLen+n)
	}
	body := make([]byte, sumLen+n)
	if _, err := io.ReadFull(c.r, body); err != nil {
		c.t.Fatal(err)
	}
	sums, data := body[:sumLen], body[sumLen:]
	if withSums && string(sums) != string(sums512(data)) {
		c.t.Fatalf("packet %d at %d: checksums do not match the data", hdr.GetSeqno(), hdr.GetOffsetInBlock())
	}
	return hdr, data
}
