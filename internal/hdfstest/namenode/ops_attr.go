// Permission checks and the attribute and statistics calls: setPermission,
// setOwner, setTimes, getContentSummary, getFsStats, getServerDefaults,
// renewLease.
package namenode

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	hdfs "github.com/colinmarc/hdfs/protocol/hadoop_hdfs"
	"github.com/golang/protobuf/proto"
)

// superuser bypasses every permission check.
const superuser = "hdfs"

// Permission bits as in the "other" triplet.
const (
	permRead  = 4
	permWrite = 2
)

// checkAccess allows the superuser, the owner by the owner bits and anyone
// else by the other bits (groups are not modelled). Traversal (x on the
// ancestors) is not checked.
func checkAccess(c *call, owner string, perm, bit uint32, p string) *remoteError {
	if c.user == superuser {
		return nil
	}
	if c.user == owner {
		perm >>= 6
	}
	if perm&bit != 0 {
		return nil
	}
	return rerr(exAccessControl, "Permission denied: user=%s, access=%s, inode=%q:%s:%o",
		c.user, map[uint32]string{permRead: "READ", permWrite: "WRITE"}[bit], p, owner, perm)
}

// ownerOf returns an inode's owner.
func ownerOf(n *inode) string {
	if n.file != nil {
		return n.file.Owner
	}
	return n.dir.Owner
}

// setAttr resolves src, checks the caller owns it, applies fn to a copy of
// its metadata and saves it.
func (s *Server) setAttr(c *call, src string, fn func(perm *uint32, owner, group *string)) *remoteError {
	n, re := s.ns.lookup(src)
	if re != nil {
		return re
	}
	if c.user != superuser && c.user != ownerOf(n) {
		return rerr(exAccessControl, "Permission denied: user %s is not the owner of %s", c.user, src)
	}
	var err error
	if n.file != nil {
		fn(&n.file.Perm, &n.file.Owner, &n.file.Group)
		err = s.ns.writeJSON(n.local, n.file)
	} else {
		fn(&n.dir.Perm, &n.dir.Owner, &n.dir.Group)
		err = s.ns.writeJSON(filepath.Join(n.local, dirMetaName), n.dir)
	}
	if err != nil {
		return rerr(exIO, "%v", err)
	}
	return nil
}

func (s *Server) setPermission(c *call, req *hdfs.SetPermissionRequestProto) (proto.Message, *remoteError) {
	re := s.setAttr(c, req.GetSrc(), func(perm *uint32, _, _ *string) {
		*perm = req.GetPermission().GetPerm() & 0o7777
	})
	if re != nil {
		return nil, re
	}
	return &hdfs.SetPermissionResponseProto{}, nil
}

func (s *Server) setOwner(c *call, req *hdfs.SetOwnerRequestProto) (proto.Message, *remoteError) {
	re := s.setAttr(c, req.GetSrc(), func(_ *uint32, owner, group *string) {
		if req.Username != nil {
			*owner = req.GetUsername()
		}
		if req.Groupname != nil {
			*group = req.GetGroupname()
		}
	})
	if re != nil {
		return nil, re
	}
	return &hdfs.SetOwnerResponseProto{}, nil
}

func (s *Server) setTimes(c *call, req *hdfs.SetTimesRequestProto) (proto.Message, *remoteError) {
	n, re := s.ns.lookup(req.GetSrc())
	if re != nil {
		return nil, re
	}
	if n.file != nil { // directory times follow the real directory
		if mt := int64(req.GetMtime()); mt >= 0 {
			n.file.MTime = mt
		}
		if at := int64(req.GetAtime()); at >= 0 {
			n.file.ATime = at
		}
		if err := s.ns.writeJSON(n.local, n.file); err != nil {
			return nil, rerr(exIO, "%v", err)
		}
	}
	return &hdfs.SetTimesResponseProto{}, nil
}

func (s *Server) getContentSummary(c *call, req *hdfs.GetContentSummaryRequestProto) (proto.Message, *remoteError) {
	n, re := s.ns.lookup(req.GetPath())
	if re != nil {
		return nil, re
	}
	var length, files, dirs uint64
	err := filepath.WalkDir(n.local, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir():
			dirs++
		case d.Name() != dirMetaName:
			var m manifest
			if b, err := os.ReadFile(p); err == nil && json.Unmarshal(b, &m) == nil {
				files++
				length += m.Length
			}
		}
		return nil
	})
	if err != nil {
		return nil, rerr(exIO, "%v", err)
	}
	none := ^uint64(0) // -1: no quota
	return &hdfs.GetContentSummaryResponseProto{Summary: &hdfs.ContentSummaryProto{
		Length: proto.Uint64(length), FileCount: proto.Uint64(files),
		DirectoryCount: proto.Uint64(dirs), Quota: proto.Uint64(none),
		SpaceConsumed: proto.Uint64(length), SpaceQuota: proto.Uint64(none),
	}}, nil
}

func (s *Server) getFsStats(c *call, req *hdfs.GetFsStatusRequestProto) (proto.Message, *remoteError) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(s.ns.root, &st); err != nil {
		return nil, rerr(exIO, "%v", err)
	}
	capacity := st.Blocks * uint64(st.Bsize)
	free := st.Bavail * uint64(st.Bsize)
	zero := proto.Uint64(0)
	return &hdfs.GetFsStatsResponseProto{
		Capacity: proto.Uint64(capacity), Used: proto.Uint64(capacity - free),
		Remaining: proto.Uint64(free), UnderReplicated: zero,
		CorruptBlocks: zero, MissingBlocks: zero,
	}, nil
}

func (s *Server) getServerDefaults(c *call, req *hdfs.GetServerDefaultsRequestProto) (proto.Message, *remoteError) {
	return &hdfs.GetServerDefaultsResponseProto{ServerDefaults: &hdfs.FsServerDefaultsProto{
		BlockSize:           proto.Uint64(defaultBlockSize),
		BytesPerChecksum:    proto.Uint32(512),
		WritePacketSize:     proto.Uint32(64 << 10),
		Replication:         proto.Uint32(1),
		FileBufferSize:      proto.Uint32(4096),
		EncryptDataTransfer: proto.Bool(false),
		TrashInterval:       proto.Uint64(0),
		ChecksumType:        hdfs.ChecksumTypeProto_CHECKSUM_CRC32C.Enum(),
	}}, nil
}

func (s *Server) renewLease(c *call, req *hdfs.RenewLeaseRequestProto) (proto.Message, *remoteError) {
	return &hdfs.RenewLeaseResponseProto{}, nil
}
