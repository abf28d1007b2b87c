// Package namenode is a test-only HDFS namenode: it speaks Hadoop RPC
// (ClientNamenodeProtocol, SIMPLE auth, no SASL) for the calls the
// colinmarc/hdfs client makes, over a namespace kept in a directory. It
// imports the v1 protocol packages of colinmarc/hdfs and so must never be
// linked into a binary that also links colinmarc/hdfs/v2; it runs inside the
// hdfsd process.
package namenode

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	hadoop "github.com/colinmarc/hdfs/protocol/hadoop_common"
	"github.com/golang/protobuf/proto"
	"github.com/granary-dev/granary/internal/hdfstest/accept"
	"github.com/granary-dev/granary/internal/hdfstest/blocks"
)

// maxPacket bounds one RPC packet; the client's requests are small.
const maxPacket = 64 << 20

// Options configure a Server. Zero values: DirOwner "hdfs", Logf discards.
type Options struct {
	// Dir is the state directory: the namespace lives in Dir/ns, counters
	// in Dir/state.json, temporary manifests in Dir/tmp.
	Dir string
	// Store holds block files; the namenode deletes the blocks of removed
	// files from it.
	Store *blocks.Store
	// DataNode is the transfer address of the one datanode as clients
	// reach it (the datanode itself, or a proxy in front of it); it is
	// the location of every block.
	DataNode *net.TCPAddr
	// Standby makes every call fail with StandbyException.
	Standby bool
	// SafeMode makes every mutation fail with SafeModeException.
	SafeMode bool
	// DirOwner owns directories that have no recorded metadata (the root
	// and directories made directly on disk). Default "hdfs".
	DirOwner string
	// Logf logs one line per failed call; nil discards.
	Logf func(format string, args ...any)
}

// Server is a namenode. All namespace reads and writes happen under mu, so
// every call is atomic with respect to every other.
type Server struct {
	opts Options
	ns   *namespace

	mu sync.Mutex // guards ns (the on-disk namespace and counters)
}

// New opens (creating if needed) the namespace in opts.Dir.
func New(opts Options) (*Server, error) {
	if opts.DirOwner == "" {
		opts.DirOwner = "hdfs"
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.Store == nil || opts.DataNode == nil {
		return nil, errors.New("namenode: Store and DataNode are required")
	}
	ns, err := openNamespace(opts.Dir, opts.Store, opts.DirOwner)
	if err != nil {
		return nil, err
	}
	return &Server{opts: opts, ns: ns}, nil
}

// Serve accepts connections until ln is closed, then closes every open
// connection, waits for their goroutines and returns nil.
func (s *Server) Serve(ln net.Listener) error {
	return accept.Serve(ln, func(c net.Conn) {
		if err := s.serveConn(c); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
			s.opts.Logf("namenode: conn %s: %v", c.RemoteAddr(), err)
		}
	})
}

// serveConn runs one client connection: the "hrpc" preamble, the
// connection context, then calls answered in order.
func (s *Server) serveConn(c net.Conn) error {
	r := bufio.NewReader(c)
	var pre [7]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return err
	}
	if string(pre[:4]) != "hrpc" || pre[4] != 9 || pre[6] != 0 {
		return fmt.Errorf("bad preamble %q (only version 9, SIMPLE auth)", pre[:])
	}
	pkt, err := readPacket(r)
	if err != nil {
		return err
	}
	rh, ctx := &hadoop.RpcRequestHeaderProto{}, &hadoop.IpcConnectionContextProto{}
	if _, err := splitMessages(pkt, rh, ctx); err != nil {
		return fmt.Errorf("connection context: %w", err)
	}
	user := ctx.GetUserInfo().GetEffectiveUser()
	if user == "" {
		user = "hdfs"
	}
	for {
		pkt, err := readPacket(r)
		if err != nil {
			return err
		}
		if err := s.serveCall(c, user, pkt); err != nil {
			return err
		}
	}
}

// serveCall decodes one call packet, runs it and writes the response.
func (s *Server) serveCall(w io.Writer, user string, pkt []byte) error {
	rh, h := &hadoop.RpcRequestHeaderProto{}, &hadoop.RequestHeaderProto{}
	rest, err := splitMessages(pkt, rh, h)
	if err != nil {
		return fmt.Errorf("call header: %w", err)
	}
	body, _, err := nextMessage(rest)
	if err != nil {
		return fmt.Errorf("call body: %w", err)
	}
	resp := &hadoop.RpcResponseHeaderProto{
		CallId:              proto.Uint32(uint32(rh.GetCallId())),
		Status:              hadoop.RpcResponseHeaderProto_SUCCESS.Enum(),
		ServerIpcVersionNum: proto.Uint32(9),
		ClientId:            rh.GetClientId(),
	}
	out, rerr := s.dispatch(&call{user: user, method: h.GetMethodName()}, body)
	if rerr != nil {
		s.opts.Logf("namenode: %s by %s: %s: %s", h.GetMethodName(), user, rerr.class, rerr.msg)
		resp.Status = hadoop.RpcResponseHeaderProto_ERROR.Enum()
		resp.ExceptionClassName = proto.String(rerr.class)
		resp.ErrorMsg = proto.String(rerr.msg)
		resp.ErrorDetail = rerr.code().Enum()
		out = nil
	}
	return writePacket(w, resp, out)
}

// readPacket reads one 4-byte-length-prefixed packet.
func readPacket(r io.Reader) ([]byte, error) {
	var n uint32
	if err := binary.Read(r, binary.BigEndian, &n); err != nil {
		return nil, err
	}
	if n > maxPacket {
		return nil, fmt.Errorf("packet of %d bytes", n)
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}

// nextMessage splits one varint-delimited message off b.
func nextMessage(b []byte) (msg, rest []byte, err error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, errors.New("bad varint-delimited message")
	}
	return b[k : k+int(n)], b[k+int(n):], nil
}

// splitMessages decodes consecutive varint-delimited messages and returns
// what follows them.
func splitMessages(b []byte, msgs ...proto.Message) ([]byte, error) {
	for _, m := range msgs {
		msg, rest, err := nextMessage(b)
		if err != nil {
			return nil, err
		}
		if err := proto.Unmarshal(msg, m); err != nil {
			return nil, err
		}
		b = rest
	}
	return b, nil
}

// writePacket writes a response: length, then each non-nil message
// varint-delimited.
func writePacket(w io.Writer, msgs ...proto.Message) error {
	var body bytes.Buffer
	var lenBuf [binary.MaxVarintLen64]byte
	for _, m := range msgs {
		if m == nil {
			continue
		}
		b, err := proto.Marshal(m)
		if err != nil {
			return fmt.Errorf("marshal %T: %w", m, err)
		}
		body.Write(lenBuf[:binary.PutUvarint(lenBuf[:], uint64(len(b)))])
		body.Write(b)
	}
	pkt := make([]byte, 4, 4+body.Len())
	binary.BigEndian.PutUint32(pkt, uint32(body.Len()))
	_, err := w.Write(append(pkt, body.Bytes()...))
	return err
}
