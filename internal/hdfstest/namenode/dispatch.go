// The method table of the namenode, the standby and safe-mode gates, and
// the remote exceptions calls fail with.
package namenode

import (
	"fmt"

	hadoop "github.com/colinmarc/hdfs/protocol/hadoop_common"
	"github.com/golang/protobuf/proto"
)

// Java exception classes the client recognises.
const (
	exFileNotFound    = "java.io.FileNotFoundException"
	exAccessControl   = "org.apache.hadoop.security.AccessControlException"
	exAlreadyExists   = "org.apache.hadoop.fs.FileAlreadyExistsException"
	exSafeMode        = "org.apache.hadoop.hdfs.server.namenode.SafeModeException"
	exStandby         = "org.apache.hadoop.ipc.StandbyException"
	exParentNotDir    = "org.apache.hadoop.fs.ParentNotDirectoryException"
	exNotEmpty        = "org.apache.hadoop.fs.PathIsNotEmptyDirectoryException"
	exBeingCreated    = "org.apache.hadoop.hdfs.protocol.AlreadyBeingCreatedException"
	exLeaseExpired    = "org.apache.hadoop.hdfs.server.namenode.LeaseExpiredException"
	exInvalidPath     = "org.apache.hadoop.fs.InvalidPathException"
	exIO              = "java.io.IOException"
	exNoSuchMethod    = "org.apache.hadoop.ipc.RpcNoSuchMethodException"
	exIllegalArgument = "org.apache.hadoop.HadoopIllegalArgumentException"
)

// remoteError is a failed call as the client sees it: a Java exception
// class name and a message.
type remoteError struct {
	class, msg string
}

func (e *remoteError) Error() string { return e.class + ": " + e.msg }

func (e *remoteError) code() hadoop.RpcResponseHeaderProto_RpcErrorCodeProto {
	if e.class == exNoSuchMethod {
		return hadoop.RpcResponseHeaderProto_ERROR_NO_SUCH_METHOD
	}
	return hadoop.RpcResponseHeaderProto_ERROR_APPLICATION
}

func rerr(class, format string, args ...any) *remoteError {
	return &remoteError{class: class, msg: fmt.Sprintf(format, args...)}
}

// call is the context of one RPC.
type call struct {
	user   string // effective user from the connection context
	method string
}

// handler decodes a request and runs it under the namespace lock.
type handler struct {
	mutates bool // fails in safe mode
	run     func(s *Server, c *call, body []byte) (proto.Message, *remoteError)
}

// h adapts a typed handler function to the table.
func h[Req any, P interface {
	*Req
	proto.Message
}](mutates bool, fn func(s *Server, c *call, req P) (proto.Message, *remoteError)) handler {
	return handler{mutates: mutates, run: func(s *Server, c *call, body []byte) (proto.Message, *remoteError) {
		req := P(new(Req))
		if err := proto.Unmarshal(body, req); err != nil {
			return nil, rerr(exIO, "decode %s: %v", c.method, err)
		}
		return fn(s, c, req)
	}}
}

// methods is every call the namenode answers; others fail with
// RpcNoSuchMethodException.
var methods = map[string]handler{
	"getFileInfo":            h(false, (*Server).getFileInfo),
	"getListing":             h(false, (*Server).getListing),
	"getBlockLocations":      h(false, (*Server).getBlockLocations),
	"getServerDefaults":      h(false, (*Server).getServerDefaults),
	"getFsStats":             h(false, (*Server).getFsStats),
	"getContentSummary":      h(false, (*Server).getContentSummary),
	"renewLease":             h(false, (*Server).renewLease),
	"mkdirs":                 h(true, (*Server).mkdirs),
	"delete":                 h(true, (*Server).delete),
	"rename":                 h(true, (*Server).rename),
	"rename2":                h(true, (*Server).rename2),
	"create":                 h(true, (*Server).create),
	"addBlock":               h(true, (*Server).addBlock),
	"updateBlockForPipeline": h(true, (*Server).updateBlockForPipeline),
	"complete":               h(true, (*Server).complete),
	"setPermission":          h(true, (*Server).setPermission),
	"setOwner":               h(true, (*Server).setOwner),
	"setTimes":               h(true, (*Server).setTimes),
	"setXAttr":               h(true, (*Server).setXAttr),
	"removeXAttr":            h(true, (*Server).removeXAttr),
	"listXAttrs":             h(false, (*Server).listXAttrs),
	"getXAttrs":              h(false, (*Server).getXAttrs),
}

// dispatch runs one call under s.mu after the standby and safe-mode gates.
func (s *Server) dispatch(c *call, body []byte) (proto.Message, *remoteError) {
	if s.opts.Standby {
		return nil, rerr(exStandby, "Operation category %s is not supported in state standby", c.method)
	}
	hd, ok := methods[c.method]
	if !ok {
		return nil, rerr(exNoSuchMethod, "unknown method %s called on ClientProtocol", c.method)
	}
	if hd.mutates && s.opts.SafeMode {
		return nil, rerr(exSafeMode, "Cannot %s: Name node is in safe mode.", c.method)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return hd.run(s, c, body)
}
