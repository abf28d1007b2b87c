// OP_WRITE_BLOCK: receive a new block's packets, verify and ack them, and
// publish the block atomically.
package datanode

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"

	hdfs "github.com/colinmarc/hdfs/protocol/hadoop_hdfs"
	"github.com/golang/protobuf/proto"
)

// writeBlock serves an OpWriteBlockProto. The block is written to
// store.TempPath(id) and renamed to store.Path(id) only after the last
// packet arrived and the file was fsynced, and before that packet is acked:
// a client whose close succeeded finds its block whole, and any failure
// (bad checksum, disconnect, shutdown) removes the temporary file, leaving
// no block at all.
//
// Invariant against two writers of one block: the temporary file is
// created with O_EXCL before the finalized block is looked for, so a second
// writer either fails to create it (the first is still writing) or, if the
// first has already renamed it, sees the finalized block and is refused.
func (s *server) writeBlock(c *dnConn, body []byte) {
	op := &hdfs.OpWriteBlockProto{}
	if err := unmarshal(body, op); err != nil {
		c.respond(hdfs.Status_ERROR, fmt.Sprintf("bad OpWriteBlockProto: %v", err))
		return
	}
	id := op.GetHeader().GetBaseHeader().GetBlock().GetBlockId()
	sum, status, err := checkWriteOp(op)
	if err != nil {
		s.logf("datanode: write block %d: %v", id, err)
		c.respond(status, err.Error())
		return
	}
	tmp := s.store.TempPath(id)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		s.logf("datanode: write block %d: %v", id, err)
		c.respond(hdfs.Status_ERROR_EXISTS, fmt.Sprintf("block %d is already being written", id))
		return
	}
	finalized := false
	defer func() {
		if !finalized {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := os.Stat(s.store.Path(id)); err == nil {
		c.respond(hdfs.Status_ERROR_EXISTS, fmt.Sprintf("block %d already exists", id))
		return
	}
	if err := writeDelimited(c.conn, &hdfs.BlockOpResponseProto{
		Status:       hdfs.Status_SUCCESS.Enum(),
		FirstBadLink: proto.String(""),
		Message:      proto.String(""),
	}); err != nil {
		s.logf("datanode: write block %d: %v", id, err)
		return
	}
	rcv := &receiver{s: s, c: c, sum: sum, id: id, f: f}
	if err := rcv.run(); err != nil {
		s.logf("datanode: write block %d aborted at offset %d: %v", id, rcv.off, err)
		return
	}
	finalized = true
}

// checkWriteOp returns the checksum scheme of a write this datanode can
// serve, or an error and the status to refuse it with.
func checkWriteOp(op *hdfs.OpWriteBlockProto) (checksum, hdfs.Status, error) {
	if st := op.GetStage(); st != hdfs.OpWriteBlockProto_PIPELINE_SETUP_CREATE {
		return checksum{}, hdfs.Status_ERROR_UNSUPPORTED, fmt.Errorf("block construction stage %v is not supported", st)
	}
	if len(op.GetTargets()) > 0 {
		return checksum{}, hdfs.Status_ERROR_UNSUPPORTED, fmt.Errorf("pipelines beyond one datanode are not supported (%d targets)", len(op.GetTargets()))
	}
	sum, err := newChecksum(op.GetRequestedChecksum())
	if err != nil {
		return checksum{}, hdfs.Status_ERROR_UNSUPPORTED, err
	}
	return sum, hdfs.Status_SUCCESS, nil
}

// receiver is the state of one block being received.
type receiver struct {
	s   *server
	c   *dnConn
	sum checksum
	id  uint64
	f   *os.File // store.TempPath(id), open for writing
	off int64    // bytes received and written so far
}

// errAborted wraps the reason a write was refused after an error ack.
var errAborted = errors.New("refused")

// run receives packets until the last one, which it finalizes and acks;
// it returns nil only if the block was published. Heartbeats (seqno -1) are
// acked and skipped. Every other packet must continue at the offset
// reached; its chunks' checksums are verified before its data is written,
// and it is acked SUCCESS once written.
func (r *receiver) run() error {
	for {
		r.c.extend()
		p, err := readPacket(r.c.r, r.sum)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				err = fmt.Errorf("client went away: %w", err)
			}
			return err
		}
		seqno := p.hdr.GetSeqno()
		if seqno == heartbeatSeqno && len(p.data) == 0 && !p.hdr.GetLastPacketInBlock() {
			if err := r.ack(seqno, hdfs.Status_SUCCESS); err != nil {
				return err
			}
			continue
		}
		if err := r.accept(p); err != nil {
			return err
		}
		if p.hdr.GetLastPacketInBlock() {
			if err := r.finalize(); err != nil {
				r.ack(seqno, hdfs.Status_ERROR)
				return err
			}
		}
		if err := r.ack(seqno, hdfs.Status_SUCCESS); err != nil {
			// The block is published: the client may yet complete the
			// file, and a lost last ack only fails its close.
			if p.hdr.GetLastPacketInBlock() {
				r.s.logf("datanode: write block %d: last ack: %v", r.id, err)
				return nil
			}
			return err
		}
		if p.hdr.GetLastPacketInBlock() {
			return nil
		}
	}
}

// accept checks a packet's offset and checksums and writes its data; on a
// refusal it sends the error ack itself.
func (r *receiver) accept(p *packet) error {
	seqno := p.hdr.GetSeqno()
	if got := p.hdr.GetOffsetInBlock(); got != r.off {
		r.ack(seqno, hdfs.Status_ERROR)
		return fmt.Errorf("%w: packet %d at offset %d, want %d", errAborted, seqno, got, r.off)
	}
	if i := r.sum.verify(p.data, p.sums); i >= 0 {
		r.ack(seqno, hdfs.Status_ERROR_CHECKSUM)
		return fmt.Errorf("%w: packet %d: checksum mismatch in chunk %d", errAborted, seqno, i)
	}
	if _, err := r.f.Write(p.data); err != nil {
		r.ack(seqno, hdfs.Status_ERROR)
		return err
	}
	r.off += int64(len(p.data))
	return nil
}

// finalize fsyncs and closes the temporary file and renames it into place,
// then fsyncs the directory so the rename is durable too; if that fails
// the block is removed again.
func (r *receiver) finalize() error {
	if err := r.f.Sync(); err != nil {
		return err
	}
	if err := r.f.Close(); err != nil {
		return err
	}
	path := r.s.store.Path(r.id)
	if err := os.Rename(r.s.store.TempPath(r.id), path); err != nil {
		return err
	}
	dir, err := os.Open(filepath.Dir(path))
	if err == nil {
		err = dir.Sync()
		dir.Close()
	}
	if err != nil {
		os.Remove(path) // refused blocks are never left behind
	}
	return err
}

// ack sends a PipelineAckProto for seqno with one reply, this node's.
func (r *receiver) ack(seqno int64, status hdfs.Status) error {
	return writeDelimited(r.c.conn, &hdfs.PipelineAckProto{
		Seqno:                  proto.Int64(seqno),
		Reply:                  []hdfs.Status{status},
		DownstreamAckTimeNanos: proto.Uint64(0),
	})
}
