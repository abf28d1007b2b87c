// OP_READ_BLOCK: stream part of a finalized block as checksummed packets.
package datanode

import (
	"fmt"
	"io"
	"os"

	hdfs "github.com/colinmarc/hdfs/protocol/hadoop_hdfs"
	"github.com/golang/protobuf/proto"
)

// readBlock serves an OpReadBlockProto. The reply starts at the requested
// offset rounded down to a chunk boundary (the chunkOffset it announces)
// and ends at offset+len rounded up to one, or at the block's end, so that
// every chunk sent is whole and its checksum can be checked. Data packets
// carry at most maxPacketData bytes and start on chunk boundaries; an empty
// packet with lastPacketInBlock ends the stream.
func (s *server) readBlock(c *dnConn, body []byte) {
	op := &hdfs.OpReadBlockProto{}
	if err := unmarshal(body, op); err != nil {
		c.respond(hdfs.Status_ERROR, fmt.Sprintf("bad OpReadBlockProto: %v", err))
		return
	}
	id := op.GetHeader().GetBaseHeader().GetBlock().GetBlockId()
	f, err := os.Open(s.store.Path(id))
	if err != nil {
		s.logf("datanode: read block %d: %v", id, err)
		c.respond(hdfs.Status_ERROR, fmt.Sprintf("replica not found for block %d", id))
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		c.respond(hdfs.Status_ERROR, fmt.Sprintf("block %d: %v", id, err))
		return
	}
	size, off, n := uint64(st.Size()), op.GetOffset(), op.GetLen()
	if off > size || n > size-off {
		c.respond(hdfs.Status_ERROR, fmt.Sprintf("offset %d and length %d don't match block %d of %d bytes", off, n, id, size))
		return
	}
	start := off - off%bytesPerChecksum
	end := min(size, (off+n+bytesPerChecksum-1)/bytesPerChecksum*bytesPerChecksum)

	sum := checksum{table: castagnoli, size: 4, chunk: bytesPerChecksum}
	ctype := hdfs.ChecksumTypeProto_CHECKSUM_CRC32C
	if !op.GetSendChecksums() {
		sum, ctype = checksum{chunk: bytesPerChecksum}, hdfs.ChecksumTypeProto_CHECKSUM_NULL
	}
	err = writeDelimited(c.conn, &hdfs.BlockOpResponseProto{
		Status:  hdfs.Status_SUCCESS.Enum(),
		Message: proto.String(""),
		ReadOpChecksumInfo: &hdfs.ReadOpChecksumInfoProto{
			Checksum:    &hdfs.ChecksumProto{Type: ctype.Enum(), BytesPerChecksum: proto.Uint32(bytesPerChecksum)},
			ChunkOffset: proto.Uint64(start),
		},
	})
	if err == nil {
		err = s.sendPackets(c, f, sum, int64(start), int64(end))
	}
	if err != nil {
		s.logf("datanode: read block %d [%d,%d): %v", id, start, end, err)
		return
	}
	// A Java client reports CHECKSUM_OK; the Go client just hangs up, so
	// this read ends with EOF and either way there is nothing to do.
	c.extend()
	readDelimited(c.r)
}

// sendPackets sends f[start:end) in data packets, then the empty last
// packet, with seqnos counting from 0.
func (s *server) sendPackets(c *dnConn, f *os.File, sum checksum, start, end int64) error {
	buf := make([]byte, maxPacketData)
	seqno := int64(0)
	for pos := start; pos < end; pos += maxPacketData {
		data := buf[:min(end-pos, maxPacketData)]
		if _, err := f.ReadAt(data, pos); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF // the block shrank: never expected
			}
			return err
		}
		c.extend()
		if err := writePacket(c.conn, dataPacket(pos, seqno, false, sum.sums(data), data)); err != nil {
			return err
		}
		seqno++
	}
	c.extend()
	return writePacket(c.conn, dataPacket(end, seqno, true, nil, nil))
}

// dataPacket builds a packet with its header.
func dataPacket(off, seqno int64, last bool, sums, data []byte) *packet {
	return &packet{
		hdr: &hdfs.PacketHeaderProto{
			OffsetInBlock:     proto.Int64(off),
			Seqno:             proto.Int64(seqno),
			LastPacketInBlock: proto.Bool(last),
			DataLen:           proto.Int32(int32(len(data))),
		},
		sums: sums,
		data: data,
	}
}
