// Extended attributes of files: setXAttr, getXAttrs, listXAttrs and
// removeXAttr, kept in the file's manifest (so a rename carries them).
// Directories hold none.
package namenode

import (
	"strconv"
	"strings"

	hdfs "github.com/colinmarc/hdfs/protocol/hadoop_hdfs"
	"github.com/golang/protobuf/proto"
)

// xattrKey names an attribute in the manifest: "<namespace>.<name>".
func xattrKey(x *hdfs.XAttrProto) string {
	return strconv.Itoa(int(x.GetNamespace())) + "." + x.GetName()
}

// xattrOf rebuilds an attribute from its manifest key and value.
func xattrOf(key, value string) *hdfs.XAttrProto {
	nsText, name, _ := strings.Cut(key, ".")
	ns, _ := strconv.Atoi(nsText)
	return &hdfs.XAttrProto{Namespace: hdfs.XAttrProto_XAttrNamespaceProto(ns).Enum(), Name: proto.String(name), Value: []byte(value)}
}

// xattrFile resolves src to a file the caller may write (set) or read.
func (s *Server) xattrFile(c *call, src string, write bool) (*inode, *remoteError) {
	n, re := s.ns.lookup(src)
	if re != nil {
		return nil, re
	}
	bit := uint32(permRead)
	if write {
		bit = permWrite
	}
	if n.file == nil {
		if write {
			return nil, rerr(exIO, "the test namenode keeps extended attributes of files only: %s", src)
		}
		return n, nil
	}
	return n, checkAccess(c, n.file.Owner, n.file.Perm, bit, src)
}

func (s *Server) setXAttr(c *call, req *hdfs.SetXAttrRequestProto) (proto.Message, *remoteError) {
	n, re := s.xattrFile(c, req.GetSrc(), true)
	if re != nil {
		return nil, re
	}
	if n.file.XAttrs == nil {
		n.file.XAttrs = map[string]string{}
	}
	n.file.XAttrs[xattrKey(req.GetXAttr())] = string(req.GetXAttr().GetValue())
	if err := s.ns.writeJSON(n.local, n.file); err != nil {
		return nil, rerr(exIO, "%v", err)
	}
	return &hdfs.SetXAttrResponseProto{}, nil
}

func (s *Server) removeXAttr(c *call, req *hdfs.RemoveXAttrRequestProto) (proto.Message, *remoteError) {
	n, re := s.xattrFile(c, req.GetSrc(), true)
	if re != nil {
		return nil, re
	}
	delete(n.file.XAttrs, xattrKey(req.GetXAttr()))
	if err := s.ns.writeJSON(n.local, n.file); err != nil {
		return nil, rerr(exIO, "%v", err)
	}
	return &hdfs.RemoveXAttrResponseProto{}, nil
}

func (s *Server) listXAttrs(c *call, req *hdfs.ListXAttrsRequestProto) (proto.Message, *remoteError) {
	n, re := s.xattrFile(c, req.GetSrc(), false)
	if re != nil {
		return nil, re
	}
	resp := &hdfs.ListXAttrsResponseProto{}
	if n.file != nil {
		for k, v := range n.file.XAttrs {
			resp.XAttrs = append(resp.XAttrs, xattrOf(k, v))
		}
	}
	return resp, nil
}

func (s *Server) getXAttrs(c *call, req *hdfs.GetXAttrsRequestProto) (proto.Message, *remoteError) {
	n, re := s.xattrFile(c, req.GetSrc(), false)
	if re != nil {
		return nil, re
	}
	resp := &hdfs.GetXAttrsResponseProto{}
	if n.file == nil {
		return resp, nil
	}
	want := req.GetXAttrs()
	for k, v := range n.file.XAttrs {
		if len(want) == 0 || wanted(want, k) {
			resp.XAttrs = append(resp.XAttrs, xattrOf(k, v))
		}
	}
	return resp, nil
}

func wanted(want []*hdfs.XAttrProto, key string) bool {
	for _, w := range want {
		if xattrKey(w) == key {
			return true
		}
	}
	return false
}
