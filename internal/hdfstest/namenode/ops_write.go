// Calls that create and read files' blocks: create, addBlock,
// updateBlockForPipeline, complete, getBlockLocations.
package namenode

import (
	"path"

	hadoop "github.com/colinmarc/hdfs/protocol/hadoop_common"
	hdfs "github.com/colinmarc/hdfs/protocol/hadoop_hdfs"
	"github.com/golang/protobuf/proto"
)

const (
	defaultBlockSize = 128 << 20
	bytesPerChecksum = 512
	poolID           = "BP-granary-test"
	genStamp         = 1001
	createOverwrite  = 2 // CreateFlagProto_OVERWRITE bit
)

func (s *Server) create(c *call, req *hdfs.CreateRequestProto) (proto.Message, *remoteError) {
	p, _, re := clean(req.GetSrc())
	if re != nil {
		return nil, re
	}
	bs := req.GetBlockSize()
	if bs == 0 {
		bs = defaultBlockSize
	}
	if bs%bytesPerChecksum != 0 {
		return nil, rerr(exIllegalArgument, "block size %d is not a multiple of %d", bs, bytesPerChecksum)
	}
	parent, re := s.createParent(c, p, req.GetCreateParent())
	if re != nil {
		return nil, re
	}
	if re := checkAccess(c, parent.dir.Owner, parent.dir.Perm, permWrite, p); re != nil {
		return nil, re
	}
	old, re := s.ns.lookup(p)
	switch {
	case re != nil && re.class != exFileNotFound:
		return nil, re
	case re != nil: // new file
	case old.file == nil:
		return nil, rerr(exAlreadyExists, "%s already exists as a directory", p)
	case !old.file.Complete:
		return nil, rerr(exBeingCreated, "%s is being created by %s", p, old.file.Client)
	case req.GetCreateFlag()&createOverwrite == 0:
		return nil, rerr(exAlreadyExists, "%s for client %s already exists", p, req.GetClientName())
	default:
		s.ns.dropBlocks(old.file)
	}
	id, err := s.ns.nextFile()
	if err != nil {
		return nil, rerr(exIO, "%v", err)
	}
	now := nowMillis()
	m := &manifest{
		ID: id, Blocks: []blockRec{}, MTime: now, ATime: now,
		Perm: req.GetMasked().GetPerm() & 0o7777, Owner: c.user, Group: parent.dir.Group,
		BlockSize: bs, Replication: req.GetReplication(), Client: req.GetClientName(),
	}
	n := &inode{local: s.ns.local(p), file: m}
	if err := s.ns.writeJSON(n.local, m); err != nil {
		return nil, rerr(exIO, "%v", err)
	}
	return &hdfs.CreateResponseProto{Fs: status(n, "")}, nil
}

// createParent resolves the directory a new file goes in, making it (and
// its parents) when createParent is set.
func (s *Server) createParent(c *call, p string, createParent bool) (*inode, *remoteError) {
	parent, re := s.parentOf(p)
	if re == nil || re.class != exFileNotFound {
		return parent, re
	}
	if !createParent {
		return nil, rerr(exFileNotFound, "Parent directory doesn't exist: %s", path.Dir(p))
	}
	_, re = s.mkdirs(c, &hdfs.MkdirsRequestProto{
		Src: proto.String(path.Dir(p)), CreateParent: proto.Bool(true),
		Masked: &hdfs.FsPermissionProto{Perm: proto.Uint32(0o755)},
	})
	if re != nil {
		return nil, re
	}
	return s.parentOf(p)
}

// openForWrite resolves a file under construction by client.
func (s *Server) openForWrite(src, client string) (*inode, *remoteError) {
	n, re := s.ns.lookup(src)
	if re != nil {
		return nil, re
	}
	if n.file == nil {
		return nil, rerr(exFileNotFound, "Path is not a file: %s", src)
	}
	if n.file.Complete || n.file.Client != client {
		return nil, rerr(exLeaseExpired, "No lease on %s: file is not open for writing by %s", src, client)
	}
	return n, nil
}

// recordLen stores the length the client reports for one of m's blocks.
func recordLen(m *manifest, b *hdfs.ExtendedBlockProto) {
	if b == nil {
		return
	}
	m.Length = 0
	for i := range m.Blocks {
		if m.Blocks[i].ID == b.GetBlockId() {
			m.Blocks[i].Len = b.GetNumBytes()
		}
		m.Length += m.Blocks[i].Len
	}
}

func (s *Server) addBlock(c *call, req *hdfs.AddBlockRequestProto) (proto.Message, *remoteError) {
	n, re := s.openForWrite(req.GetSrc(), req.GetClientName())
	if re != nil {
		return nil, re
	}
	m := n.file
	recordLen(m, req.GetPrevious())
	id, err := s.ns.nextBlock()
	if err != nil {
		return nil, rerr(exIO, "%v", err)
	}
	offset := m.Length
	m.Blocks = append(m.Blocks, blockRec{ID: id, GenStamp: genStamp})
	if err := s.ns.writeJSON(n.local, m); err != nil {
		return nil, rerr(exIO, "%v", err)
	}
	return &hdfs.AddBlockResponseProto{Block: s.located(m.Blocks[len(m.Blocks)-1], offset)}, nil
}

// updateBlockForPipeline is called by the client after each block is
// written; lengths arrive again with addBlock and complete, so it only
// echoes the block back.
func (s *Server) updateBlockForPipeline(c *call, req *hdfs.UpdateBlockForPipelineRequestProto) (proto.Message, *remoteError) {
	b := req.GetBlock()
	rec := blockRec{ID: b.GetBlockId(), Len: b.GetNumBytes(), GenStamp: b.GetGenerationStamp()}
	return &hdfs.UpdateBlockForPipelineResponseProto{Block: s.located(rec, 0)}, nil
}

// complete closes a file. Like HDFS it answers false (the client's
// ErrReplicating) while a block is not yet finalized on the datanode; the
// client calls again.
func (s *Server) complete(c *call, req *hdfs.CompleteRequestProto) (proto.Message, *remoteError) {
	n, re := s.ns.lookup(req.GetSrc())
	if re == nil && n.file != nil && n.file.Complete {
		return &hdfs.CompleteResponseProto{Result: proto.Bool(true)}, nil // a retried close
	}
	if n, re = s.openForWrite(req.GetSrc(), req.GetClientName()); re != nil {
		return nil, re
	}
	m := n.file
	recordLen(m, req.GetLast())
	m.Blocks = s.dropEmpty(m.Blocks)
	done := true
	for _, b := range m.Blocks {
		got, err := s.ns.store.Len(b.ID)
		if err != nil {
			done = false
		} else if uint64(got) != b.Len {
			s.opts.Logf("namenode: block %d of %s: client says %d bytes, datanode has %d", b.ID, req.GetSrc(), b.Len, got)
		}
	}
	if done {
		m.Complete, m.Client, m.MTime = true, "", nowMillis()
	}
	if err := s.ns.writeJSON(n.local, m); err != nil {
		return nil, rerr(exIO, "%v", err)
	}
	return &hdfs.CompleteResponseProto{Result: proto.Bool(done)}, nil
}

// dropEmpty removes zero-length blocks: the client allocates a block even
// for an empty write and never sends it to the datanode.
func (s *Server) dropEmpty(bs []blockRec) []blockRec {
	kept := bs[:0]
	for _, b := range bs {
		if b.Len == 0 {
			s.ns.dropBlocks(&manifest{Blocks: []blockRec{b}})
			continue
		}
		kept = append(kept, b)
	}
	return kept
}

func (s *Server) getBlockLocations(c *call, req *hdfs.GetBlockLocationsRequestProto) (proto.Message, *remoteError) {
	n, re := s.ns.lookup(req.GetSrc())
	if re != nil {
		return nil, re
	}
	if n.file == nil {
		return nil, rerr(exFileNotFound, "Path is not a file: %s", req.GetSrc())
	}
	m := n.file
	if re := checkAccess(c, m.Owner, m.Perm, permRead, req.GetSrc()); re != nil {
		return nil, re
	}
	lbs := &hdfs.LocatedBlocksProto{
		FileLength:          proto.Uint64(m.Length),
		Blocks:              []*hdfs.LocatedBlockProto{},
		UnderConstruction:   proto.Bool(!m.Complete),
		IsLastBlockComplete: proto.Bool(m.Complete),
	}
	lo, hi := req.GetOffset(), req.GetOffset()+req.GetLength()
	var off uint64
	for _, b := range m.Blocks {
		if off < hi && off+b.Len > lo {
			lbs.Blocks = append(lbs.Blocks, s.located(b, off))
		}
		off += b.Len
	}
	if k := len(m.Blocks); k > 0 {
		lbs.LastBlock = s.located(m.Blocks[k-1], m.Length-m.Blocks[k-1].Len)
	}
	return &hdfs.GetBlockLocationsResponseProto{Locations: lbs}, nil
}

// located renders a block at a file offset, located on the one datanode.
func (s *Server) located(b blockRec, offset uint64) *hdfs.LocatedBlockProto {
	dn := s.opts.DataNode
	ip := dn.IP.String()
	return &hdfs.LocatedBlockProto{
		B: &hdfs.ExtendedBlockProto{
			PoolId: proto.String(poolID), BlockId: proto.Uint64(b.ID),
			GenerationStamp: proto.Uint64(b.GenStamp), NumBytes: proto.Uint64(b.Len),
		},
		Offset: proto.Uint64(offset),
		Locs: []*hdfs.DatanodeInfoProto{{Id: &hdfs.DatanodeIDProto{
			IpAddr: proto.String(ip), HostName: proto.String(ip),
			DatanodeUuid: proto.String("granary-test-dn"), XferPort: proto.Uint32(uint32(dn.Port)),
			InfoPort: proto.Uint32(0), IpcPort: proto.Uint32(0),
		}}},
		Corrupt: proto.Bool(false),
		BlockToken: &hadoop.TokenProto{
			Identifier: []byte{}, Password: []byte{}, Kind: proto.String(""), Service: proto.String(""),
		},
		StorageTypes: []hdfs.StorageTypeProto{hdfs.StorageTypeProto_DISK},
		StorageIDs:   []string{"DS-granary-test"},
	}
}
