// The peer protocol, served on the S3 listener under cluster.PeerPrefix to
// other members only (every request signed with the cluster secret):
//
//	GET    chunk?bucket&key&etag&index&len&chunk&off  a chunk this node owns, from off
//	PUT    chunk?bucket&key&etag&index&len&chunk      place a chunk on this owner
//	POST   forget?bucket&key                          drop an object's cached state
//	GET    ping                                       {"id": this node}
//	PUT    replica?bucket&key  (X-Granary-Object)     keep a write-back copy
//	DELETE replica?bucket&key&etag                    drop it (at the origin now)
//	GET    status?bucket&prefix&key                   this node's status
package api

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/cluster"
	"github.com/granary-dev/granary/store"
)

// PeerOptions make a node a cluster member.
type PeerOptions struct {
	Self   cluster.Member
	Secret []byte
	// Replicas keeps the write-back copies other members send; nil
	// refuses them.
	Replicas *cluster.Replicas
	// Node, if set, is the cluster view /_granary/status reports on.
	Node *cluster.Node
}

var peerPrefix = []byte(cluster.PeerPrefix)

func isPeer(c *fiber.Ctx) bool {
	return bytes.HasPrefix(c.Request().URI().PathOriginal(), peerPrefix)
}

// servePeer authenticates a peer request and answers it.
func (s *Server) servePeer(c *fiber.Ctx, r *request) error {
	r.op = opPeer
	p := s.opts.Peer
	if p == nil {
		return s3err.New(s3err.AccessDenied, "this node is not in a cluster")
	}
	req := c.Request()
	path := string(req.URI().PathOriginal())
	get := func(k string) string { return string(req.Header.Peek(k)) }
	from, err := cluster.Verify(p.Secret, r.method, path, string(req.URI().QueryString()), get, time.Now())
	if err != nil {
		s.reqLog(r).Warn().Str("peer", get(cluster.HeaderFrom)).Str("remote", c.IP()).Msg("peer request refused: bad cluster secret")
		return s3err.New(s3err.AccessDenied, err.Error())
	}
	if stream := c.Context().RequestBodyStream(); stream != nil {
		r.body = newBodyReader(stream, int64(req.Header.ContentLength()), c.Context().Conn(), s.opts.IOTimeout)
	}
	args := req.URI().QueryArgs()
	r.bucket, r.key = string(args.Peek("bucket")), string(args.Peek("key"))
	switch {
	case path == cluster.RouteChunk && r.method == mGET:
		return s.peerGetChunk(c, r)
	case path == cluster.RouteChunk && r.method == mPUT:
		return s.peerPutChunk(c, r)
	case path == cluster.RouteForget && r.method == mPOST:
		return s.peerForget(c, r, from)
	case path == cluster.RoutePing && r.method == mGET:
		return c.JSON(map[string]string{"id": p.Self.ID})
	case path == cluster.RouteReplica:
		return s.peerReplica(c, r, from)
	case path == cluster.RouteStatus && r.method == mGET:
		return s.nodeStatus(c, r)
	case path == cluster.RouteHead && r.method == mGET:
		if err := checkBucket(r.bucket); err != nil {
			return err
		}
		if err := checkKey(r.key); err != nil {
			return err
		}
		cached := string(c.Request().URI().QueryArgs().Peek("cached")) == "1"
		info, err := s.engine.PeerHead(s.baseCtx, r.bucket, r.key, cached)
		if err != nil {
			return err
		}
		return c.JSON(info)
	}
	return s3err.New(s3err.InvalidRequest, "unknown peer call "+r.method+" "+path)
}

// chunkArgs reads a chunk's name and sizes from the query.
func chunkArgs(c *fiber.Ctx) (id store.ChunkID, n, chunk, off int64, err error) {
	args := c.Request().URI().QueryArgs()
	id = store.ChunkID{Bucket: string(args.Peek("bucket")), Key: string(args.Peek("key")), ETag: string(args.Peek("etag"))}
	nums := map[string]*int64{"index": &id.Index, "len": &n, "chunk": &chunk, "off": &off}
	for name, p := range nums {
		v := args.Peek(name)
		if len(v) == 0 && name == "off" {
			continue
		}
		if *p, err = strconv.ParseInt(string(v), 10, 64); err != nil {
			return id, 0, 0, 0, s3err.New(s3err.InvalidArgument, "bad chunk "+name)
		}
	}
	if checkBucket(id.Bucket) != nil || checkKey(id.Key) != nil {
		return id, 0, 0, 0, s3err.New(s3err.InvalidArgument, "bad chunk name")
	}
	return id, n, chunk, off, nil
}

func (s *Server) peerGetChunk(c *fiber.Ctx, r *request) error {
	id, n, chunk, off, err := chunkArgs(c)
	if err != nil {
		return err
	}
	cached := string(c.Request().URI().QueryArgs().Peek("cached")) == "1"
	body, err := s.engine.PeerChunk(s.baseCtx, id, n, chunk, off, cached)
	if errors.Is(err, store.ErrNotFound) {
		return s3err.New(s3err.NoSuchKey, "chunk not cached here")
	}
	if err != nil {
		return s3err.New(s3err.InvalidArgument, err.Error())
	}
	c.Response().Header.SetContentType("application/octet-stream")
	if whole, ok := body.(interface{ Bytes() ([]byte, bool) }); ok {
		if b, ok := whole.Bytes(); ok && int64(len(b)) == n-off {
			c.Response().SetBodyRaw(b) // immutable: the tiers never modify it
			return nil
		}
	}
	c.Response().SetBodyStream(body, int(n-off))
	return nil
}

func (s *Server) peerPutChunk(c *fiber.Ctx, r *request) error {
	id, n, chunk, _, err := chunkArgs(c)
	if err != nil {
		return err
	}
	if n <= 0 || n > chunk || r.body == nil {
		return s3err.New(s3err.InvalidArgument, "bad chunk length")
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(r.body, data); err != nil {
		return s3err.New(s3err.IncompleteBody, "chunk body: "+err.Error())
	}
	if err := s.engine.StorePeerChunk(id, chunk, data); err != nil {
		return s3err.New(s3err.InvalidArgument, err.Error())
	}
	return nil
}

// peerForget drops an object's cached state, and learns its new version
// if the writer sent one (a write-back object not at the origin yet).
func (s *Server) peerForget(c *fiber.Ctx, r *request, from string) error {
	var written *store.ObjectInfo
	if h := c.Request().Header.Peek(cluster.HeaderObject); len(h) > 0 {
		info, err := cluster.DecodeObject(string(h))
		if err != nil || info.Bucket != r.bucket || info.Key != r.key || info.ETag == "" {
			return s3err.New(s3err.InvalidArgument, "bad written object")
		}
		written = &info
	}
	s.engine.PeerWrote(r.bucket, r.key, written, from)
	return nil
}

// peerReplica keeps (PUT) or drops (DELETE) a write-back copy of node
// from's object.
func (s *Server) peerReplica(c *fiber.Ctx, r *request, from string) error {
	reps := s.opts.Peer.Replicas
	if reps == nil {
		return s3err.New(s3err.NotImplemented, "this node keeps no write-back copies")
	}
	switch r.method {
	case mPUT:
		info, err := cluster.DecodeObject(string(c.Request().Header.Peek(cluster.HeaderObject)))
		if err != nil || info.Bucket != r.bucket || info.Key != r.key || r.body == nil {
			return s3err.New(s3err.InvalidArgument, "bad replica object")
		}
		if err := reps.Put(s.baseCtx, from, info, r.body); err != nil {
			if errors.Is(err, store.ErrIncompleteBody) {
				return s3err.New(s3err.IncompleteBody, err.Error())
			}
			return err
		}
		return nil
	case mDELETE:
		return reps.Drop(from, r.bucket, r.key, string(c.Request().URI().QueryArgs().Peek("etag")))
	}
	return s3err.New(s3err.InvalidRequest, "unknown replica call "+r.method)
}
