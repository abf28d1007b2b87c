// Package datanode is the test datanode of internal/hdfstest: it speaks the
// HDFS data transfer protocol (version 28) well enough for the colinmarc/hdfs
// client to read and write blocks, storing them in a blocks.Store.
//
// Supported: OP_WRITE_BLOCK (stage PIPELINE_SETUP_CREATE, a pipeline of this
// node alone, CRC32C/CRC32/NULL checksums verified per chunk) and
// OP_READ_BLOCK (CRC32C, 512-byte chunks). Every other operation gets
// ERROR_UNSUPPORTED. There is no SASL, no block token check, no encryption.
// One operation is served per connection.
//
// It is test code, and it must not import github.com/colinmarc/hdfs/v2: its
// protobuf types come from the v1 module, whose registrations clash with
// v2's (see internal/hdfstest).
package datanode

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	hdfs "github.com/colinmarc/hdfs/protocol/hadoop_hdfs"
	"github.com/golang/protobuf/proto"
	protov2 "google.golang.org/protobuf/proto"

	"github.com/granary-dev/granary/internal/hdfstest/accept"
	"github.com/granary-dev/granary/internal/hdfstest/blocks"
)

const (
	// dataTransferVersion is the protocol version clients send first.
	dataTransferVersion = 28
	opWriteBlock        = 80
	opReadBlock         = 81

	// maxMessageSize bounds a varint-delimited op message.
	maxMessageSize = 1 << 20
	// ioTimeout bounds every read or write of a connection; the client sends
	// a heartbeat packet every 30s while a write is idle, so this is ample.
	ioTimeout = 2 * time.Minute
)

// server is one Serve call.
type server struct {
	store *blocks.Store
	logf  func(string, ...any)
}

// Serve serves the data transfer protocol on ln, each connection on its own
// goroutine, until ln is closed. It then closes the connections still open
// (aborting their operations: a block being written is discarded), waits
// for their goroutines and returns nil. Any other Accept error is returned
// after the same shutdown. logf may be nil.
func Serve(ln net.Listener, store *blocks.Store, logf func(string, ...any)) error {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	s := &server{store: store, logf: logf}
	if err := accept.Serve(ln, s.serveConn); err != nil {
		return fmt.Errorf("datanode: accept: %w", err)
	}
	return nil
}

// dnConn is one client connection: reads go through r, writes straight to
// conn.
type dnConn struct {
	conn net.Conn
	r    *bufio.Reader
}

// extend pushes the connection's deadline ioTimeout into the future.
func (c *dnConn) extend() {
	c.conn.SetDeadline(time.Now().Add(ioTimeout))
}

// serveConn reads one operation and serves it, then closes the connection.
func (s *server) serveConn(conn net.Conn) {
	defer conn.Close()
	c := &dnConn{conn: conn, r: bufio.NewReader(conn)}
	c.extend()
	op, body, err := readOp(c.r)
	if err != nil {
		s.logf("datanode: %s: reading op: %v", conn.RemoteAddr(), err)
		if errors.Is(err, errVersion) {
			c.respond(hdfs.Status_ERROR, err.Error())
		}
		return
	}
	switch op {
	case opReadBlock:
		s.readBlock(c, body)
	case opWriteBlock:
		s.writeBlock(c, body)
	default:
		s.logf("datanode: %s: unsupported op %d", conn.RemoteAddr(), op)
		c.respond(hdfs.Status_ERROR_UNSUPPORTED, fmt.Sprintf("operation %d is not supported by the test datanode", op))
	}
}

var errVersion = errors.New("data transfer version mismatch")

// readOp reads an operation header: a big-endian uint16 protocol version,
// a one-byte opcode, then the varint-delimited op message, returned raw.
func readOp(r *bufio.Reader) (op byte, body []byte, err error) {
	var hdr [3]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	if v := binary.BigEndian.Uint16(hdr[:2]); v != dataTransferVersion {
		return 0, nil, fmt.Errorf("%w: got %d, want %d", errVersion, v, dataTransferVersion)
	}
	body, err = readDelimited(r)
	return hdr[2], body, err
}

// readDelimited reads one varint-length-prefixed message.
func readDelimited(r *bufio.Reader) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	if n > maxMessageSize {
		return nil, fmt.Errorf("message of %d bytes is too large", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}

// writeDelimited writes m with a varint length prefix, in one Write.
//
// The v2 client reads such a message by first reading exactly 5 bytes, so
// a message whose prefix and body total fewer than 5 bytes would hang it;
// callers set enough fields (an empty message string, a zero ack time) to
// stay above that.
func writeDelimited(w io.Writer, m proto.Message) error {
	b, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	buf := binary.AppendUvarint(make([]byte, 0, len(b)+binary.MaxVarintLen32), uint64(len(b)))
	_, err = w.Write(append(buf, b...))
	return err
}

// unmarshal decodes b into m without insisting on proto2 required fields:
// the datanode reads only the fields it needs, and a client leaving out one
// it does not use (a block token's service, say) is no reason to refuse.
func unmarshal(b []byte, m proto.Message) error {
	return protov2.UnmarshalOptions{AllowPartial: true}.Unmarshal(b, proto.MessageV2(m))
}

// respond sends a BlockOpResponseProto with status and message.
func (c *dnConn) respond(status hdfs.Status, msg string) error {
	return writeDelimited(c.conn, &hdfs.BlockOpResponseProto{
		Status:  status.Enum(),
		Message: proto.String(msg),
	})
}
