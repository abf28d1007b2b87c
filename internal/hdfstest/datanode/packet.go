// Packet framing and chunk checksums of the data transfer protocol.
//
// A packet is: a big-endian uint32 payload length (4 + checksums + data; it
// counts itself but not the header), a big-endian uint16 header length, the
// PacketHeaderProto, then one checksum per chunk of data, then the data.
// Chunks are counted from the packet's first data byte.
package datanode

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"

	hdfs "github.com/colinmarc/hdfs/protocol/hadoop_hdfs"
	"github.com/golang/protobuf/proto"
)

const (
	// bytesPerChecksum is the chunk size this datanode reads with.
	bytesPerChecksum = 512
	// maxPacketData is the most data a read packet carries: 128 chunks.
	maxPacketData = 64 << 10
	// maxPacketPayload bounds a received packet (Hadoop's limit is 16 MiB).
	maxPacketPayload = 16 << 20
	// heartbeatSeqno marks the client's keep-alive packets.
	heartbeatSeqno = -1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checksum is one chunk checksum scheme: table nil means CHECKSUM_NULL.
type checksum struct {
	table *crc32.Table
	size  int // bytes per checksum value: 4, or 0 for NULL
	chunk int // data bytes per checksum, > 0
}

// newChecksum returns the scheme a ChecksumProto asks for.
func newChecksum(p *hdfs.ChecksumProto) (checksum, error) {
	chunk := int(p.GetBytesPerChecksum())
	if chunk <= 0 || chunk > maxPacketPayload {
		return checksum{}, fmt.Errorf("bad bytesPerChecksum %d", chunk)
	}
	switch p.GetType() {
	case hdfs.ChecksumTypeProto_CHECKSUM_CRC32C:
		return checksum{table: castagnoli, size: 4, chunk: chunk}, nil
	case hdfs.ChecksumTypeProto_CHECKSUM_CRC32:
		return checksum{table: crc32.IEEETable, size: 4, chunk: chunk}, nil
	case hdfs.ChecksumTypeProto_CHECKSUM_NULL:
		return checksum{chunk: chunk}, nil
	}
	return checksum{}, fmt.Errorf("unsupported checksum type %v", p.GetType())
}

// sumsLen is the length of the checksums of n data bytes.
func (c checksum) sumsLen(n int) int {
	return (n + c.chunk - 1) / c.chunk * c.size
}

// sums returns the checksums of data's chunks.
func (c checksum) sums(data []byte) []byte {
	out := make([]byte, 0, c.sumsLen(len(data)))
	if c.table == nil {
		return out
	}
	for off := 0; off < len(data); off += c.chunk {
		end := min(off+c.chunk, len(data))
		out = binary.BigEndian.AppendUint32(out, crc32.Checksum(data[off:end], c.table))
	}
	return out
}

// verify returns the index of the first chunk of data whose checksum in
// sums is wrong, or -1. sums must be sumsLen(len(data)) long.
func (c checksum) verify(data, sums []byte) int {
	if c.table == nil {
		return -1
	}
	for i, off := 0, 0; off < len(data); i, off = i+1, off+c.chunk {
		end := min(off+c.chunk, len(data))
		if binary.BigEndian.Uint32(sums[4*i:]) != crc32.Checksum(data[off:end], c.table) {
			return i
		}
	}
	return -1
}

// packet is one received or sent packet.
type packet struct {
	hdr  *hdfs.PacketHeaderProto
	sums []byte
	data []byte
}

// readPacket reads one packet checksummed with c and checks that its
// lengths agree with each other.
func readPacket(r io.Reader, c checksum) (*packet, error) {
	var pre [6]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return nil, err
	}
	payload := int(binary.BigEndian.Uint32(pre[:4]))
	if payload < 4 || payload > maxPacketPayload {
		return nil, fmt.Errorf("bad packet payload length %d", payload)
	}
	hb := make([]byte, binary.BigEndian.Uint16(pre[4:]))
	if _, err := io.ReadFull(r, hb); err != nil {
		return nil, err
	}
	hdr := &hdfs.PacketHeaderProto{}
	if err := unmarshal(hb, hdr); err != nil {
		return nil, fmt.Errorf("packet header: %w", err)
	}
	dataLen := int(hdr.GetDataLen())
	if dataLen < 0 || payload-4 != c.sumsLen(dataLen)+dataLen {
		return nil, fmt.Errorf("packet payload length %d does not fit %d data bytes", payload, dataLen)
	}
	body := make([]byte, payload-4)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	n := c.sumsLen(dataLen)
	return &packet{hdr: hdr, sums: body[:n], data: body[n:]}, nil
}

// writePacket writes p in one Write.
func writePacket(w io.Writer, p *packet) error {
	hb, err := proto.Marshal(p.hdr)
	if err != nil {
		return err
	}
	buf := make([]byte, 6, 6+len(hb)+len(p.sums)+len(p.data))
	binary.BigEndian.PutUint32(buf, uint32(4+len(p.sums)+len(p.data)))
	binary.BigEndian.PutUint16(buf[4:], uint16(len(hb)))
	buf = append(buf, hb...)
	buf = append(buf, p.sums...)
	buf = append(buf, p.data...)
	_, err = w.Write(buf)
	return err
}
