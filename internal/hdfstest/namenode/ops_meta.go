// Namespace calls that touch no block: getFileInfo, getListing, mkdirs,
// delete, rename, rename2, and the file status they return.
package namenode

import (
	"os"
	"path"
	"path/filepath"
	"strings"

	hdfs "github.com/colinmarc/hdfs/protocol/hadoop_hdfs"
	"github.com/golang/protobuf/proto"
)

// listLimit is the most entries one getListing answer holds (HDFS's
// dfs.ls.limit default); the client pages with startAfter.
const listLimit = 1000

// status renders an inode; name is the path field ("" for getFileInfo, the
// entry's own name in a listing). Every required field is set.
func status(n *inode, name string) *hdfs.HdfsFileStatusProto {
	st := &hdfs.HdfsFileStatusProto{Path: []byte(name)}
	if n.file == nil {
		st.FileType = hdfs.HdfsFileStatusProto_IS_DIR.Enum()
		st.Length = proto.Uint64(0)
		st.Permission = &hdfs.FsPermissionProto{Perm: proto.Uint32(n.dir.Perm)}
		st.Owner, st.Group = proto.String(n.dir.Owner), proto.String(n.dir.Group)
		st.ModificationTime = proto.Uint64(uint64(n.mtime.UnixMilli()))
		st.AccessTime = proto.Uint64(0)
		return st
	}
	m := n.file
	st.FileType = hdfs.HdfsFileStatusProto_IS_FILE.Enum()
	st.Length = proto.Uint64(m.Length)
	st.Permission = &hdfs.FsPermissionProto{Perm: proto.Uint32(m.Perm)}
	st.Owner, st.Group = proto.String(m.Owner), proto.String(m.Group)
	st.ModificationTime = proto.Uint64(uint64(m.MTime))
	st.AccessTime = proto.Uint64(uint64(m.ATime))
	st.BlockReplication = proto.Uint32(m.Replication)
	st.Blocksize = proto.Uint64(m.BlockSize)
	st.FileId = proto.Uint64(m.ID)
	return st
}

func (s *Server) getFileInfo(c *call, req *hdfs.GetFileInfoRequestProto) (proto.Message, *remoteError) {
	n, re := s.ns.lookup(req.GetSrc())
	if re != nil && re.class == exFileNotFound {
		return &hdfs.GetFileInfoResponseProto{}, nil // HDFS answers null
	}
	if re != nil {
		return nil, re
	}
	return &hdfs.GetFileInfoResponseProto{Fs: status(n, "")}, nil
}

func (s *Server) getListing(c *call, req *hdfs.GetListingRequestProto) (proto.Message, *remoteError) {
	src, _, re := clean(req.GetSrc())
	if re != nil {
		return nil, re
	}
	n, re := s.ns.lookup(src)
	if re != nil && re.class == exFileNotFound {
		return &hdfs.GetListingResponseProto{}, nil // no DirList: not found
	}
	if re != nil {
		return nil, re
	}
	if n.file != nil {
		return &hdfs.GetListingResponseProto{DirList: &hdfs.DirectoryListingProto{
			PartialListing:   []*hdfs.HdfsFileStatusProto{status(n, path.Base(src))},
			RemainingEntries: proto.Uint32(0),
		}}, nil
	}
	if re := checkAccess(c, n.dir.Owner, n.dir.Perm, permRead, src); re != nil {
		return nil, re
	}
	ents, err := os.ReadDir(n.local)
	if err != nil {
		return nil, rerr(exIO, "%v", err)
	}
	after := string(req.GetStartAfter())
	list := &hdfs.DirectoryListingProto{PartialListing: []*hdfs.HdfsFileStatusProto{}}
	remaining := 0
	for _, e := range ents { // os.ReadDir sorts by name, as HDFS does
		if e.Name() == dirMetaName || e.Name() <= after {
			continue
		}
		if len(list.PartialListing) == listLimit {
			remaining++
			continue
		}
		child, re := s.ns.lookup(path.Join(src, e.Name()))
		if re != nil {
			continue // removed under us: cannot happen under s.mu
		}
		list.PartialListing = append(list.PartialListing, status(child, e.Name()))
	}
	list.RemainingEntries = proto.Uint32(uint32(remaining))
	return &hdfs.GetListingResponseProto{DirList: list}, nil
}

func (s *Server) mkdirs(c *call, req *hdfs.MkdirsRequestProto) (proto.Message, *remoteError) {
	p, parts, re := clean(req.GetSrc())
	if re != nil {
		return nil, re
	}
	parent, re := s.ns.lookup("/")
	if re != nil {
		return nil, re
	}
	cur := "/"
	for i, part := range parts {
		cur = path.Join(cur, part)
		n, re := s.ns.lookup(cur)
		last := i == len(parts)-1
		switch {
		case re == nil && n.file != nil && last:
			return nil, rerr(exAlreadyExists, "Path is not a directory: %s", p)
		case re == nil && n.file != nil:
			return nil, rerr(exParentNotDir, "Parent path is not a directory: %s", cur)
		case re == nil:
			parent = n
			continue
		case re.class != exFileNotFound:
			return nil, re
		case !last && !req.GetCreateParent():
			return nil, rerr(exFileNotFound, "Parent directory doesn't exist: %s", path.Dir(p))
		}
		if re := checkAccess(c, parent.dir.Owner, parent.dir.Perm, permWrite, cur); re != nil {
			return nil, re
		}
		perm := req.GetMasked().GetPerm() & 0o7777
		if !last {
			perm |= 0o300 // HDFS gives implicit parents u+wx
		}
		meta := dirMeta{Perm: perm, Owner: c.user, Group: parent.dir.Group}
		loc := s.ns.local(cur)
		if err := os.Mkdir(loc, 0o755); err != nil {
			return nil, rerr(exIO, "%v", err)
		}
		if err := s.ns.writeJSON(filepath.Join(loc, dirMetaName), meta); err != nil {
			return nil, rerr(exIO, "%v", err)
		}
		parent, _ = s.ns.lookup(cur)
	}
	return &hdfs.MkdirsResponseProto{Result: proto.Bool(true)}, nil
}

// parentOf resolves the directory holding p, which must exist.
func (s *Server) parentOf(p string) (*inode, *remoteError) {
	n, re := s.ns.lookup(path.Dir(p))
	if re != nil {
		return nil, re
	}
	if n.file != nil {
		return nil, rerr(exParentNotDir, "Parent path is not a directory: %s", path.Dir(p))
	}
	return n, nil
}

func (s *Server) delete(c *call, req *hdfs.DeleteRequestProto) (proto.Message, *remoteError) {
	p, _, re := clean(req.GetSrc())
	if re != nil {
		return nil, re
	}
	n, re := s.ns.lookup(p)
	if p == "/" || (re != nil && re.class == exFileNotFound) {
		return &hdfs.DeleteResponseProto{Result: proto.Bool(false)}, nil
	}
	if re != nil {
		return nil, re
	}
	parent, re := s.parentOf(p)
	if re != nil {
		return nil, re
	}
	if re := checkAccess(c, parent.dir.Owner, parent.dir.Perm, permWrite, p); re != nil {
		return nil, re
	}
	if n.file == nil && !req.GetRecursive() {
		empty, err := isEmptyDir(n.local)
		if err != nil {
			return nil, rerr(exIO, "%v", err)
		}
		if !empty {
			return nil, rerr(exNotEmpty, "`%s is non empty': Directory is not empty", p)
		}
	}
	if err := s.ns.removeTree(n.local); err != nil {
		return nil, rerr(exIO, "%v", err)
	}
	return &hdfs.DeleteResponseProto{Result: proto.Bool(true)}, nil
}

// moveChecks runs the checks both rename calls share: src
// exists, neither is the root, dst is not inside src, dst's parent is a
// directory, and the caller may write both parents. It returns the
// resolved src and, when dst exists, the resolved dst.
func (s *Server) moveChecks(c *call, src, dst string) (sn, dn *inode, re *remoteError) {
	if sn, re = s.ns.lookup(src); re != nil {
		return nil, nil, re
	}
	if src == "/" || dst == "/" || strings.HasPrefix(dst, src+"/") {
		return nil, nil, rerr(exIO, "cannot rename %s to %s", src, dst)
	}
	for _, p := range []string{src, dst} {
		parent, re := s.parentOf(p)
		if re != nil {
			return nil, nil, re
		}
		if re := checkAccess(c, parent.dir.Owner, parent.dir.Perm, permWrite, p); re != nil {
			return nil, nil, re
		}
	}
	dn, re = s.ns.lookup(dst)
	if re != nil && re.class != exFileNotFound {
		return nil, nil, re
	}
	return sn, dn, nil
}

func (s *Server) rename(c *call, req *hdfs.RenameRequestProto) (proto.Message, *remoteError) {
	fail := &hdfs.RenameResponseProto{Result: proto.Bool(false)}
	src, _, re := clean(req.GetSrc())
	if re != nil {
		return nil, re
	}
	dst, _, re := clean(req.GetDst())
	if re != nil {
		return nil, re
	}
	if d, re := s.ns.lookup(dst); re == nil && d.file == nil {
		dst = path.Join(dst, path.Base(src)) // into an existing directory
	}
	sn, dn, re := s.moveChecks(c, src, dst)
	if re != nil {
		if re.class == exAccessControl {
			return nil, re
		}
		return fail, nil
	}
	if dn != nil {
		return fail, nil
	}
	if err := os.Rename(sn.local, s.ns.local(dst)); err != nil {
		return nil, rerr(exIO, "%v", err)
	}
	return &hdfs.RenameResponseProto{Result: proto.Bool(true)}, nil
}

func (s *Server) rename2(c *call, req *hdfs.Rename2RequestProto) (proto.Message, *remoteError) {
	src, _, re := clean(req.GetSrc())
	if re != nil {
		return nil, re
	}
	dst, _, re := clean(req.GetDst())
	if re != nil {
		return nil, re
	}
	if src == dst {
		return nil, rerr(exAlreadyExists, "The source %s and destination %s are the same", src, dst)
	}
	sn, dn, re := s.moveChecks(c, src, dst)
	if re != nil {
		return nil, re
	}
	if dn != nil {
		if re := replaceable(sn, dn, dst, req.GetOverwriteDest()); re != nil {
			return nil, re
		}
		if err := s.ns.removeTree(dn.local); err != nil {
			return nil, rerr(exIO, "%v", err)
		}
	}
	if err := os.Rename(sn.local, s.ns.local(dst)); err != nil {
		return nil, rerr(exIO, "%v", err)
	}
	return &hdfs.Rename2ResponseProto{}, nil
}

// replaceable reports why rename2 may not replace the existing dst.
func replaceable(sn, dn *inode, dst string, overwrite bool) *remoteError {
	if !overwrite {
		return rerr(exAlreadyExists, "rename destination %s already exists", dst)
	}
	if (sn.file == nil) != (dn.file == nil) {
		return rerr(exIO, "Source and destination %s must both be files or both directories", dst)
	}
	if dn.file == nil {
		empty, err := isEmptyDir(dn.local)
		if err != nil {
			return rerr(exIO, "%v", err)
		}
		if !empty {
			return rerr(exIO, "rename destination directory is not empty: %s", dst)
		}
	}
	return nil
}
