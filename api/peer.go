// The peer protocol on the S3 listener: package cluster/peer answers it;
// this server hands it the calls under peer.Prefix, with its connection
// limits, request log and metrics.
package api

import (
	"io"

	"github.com/gofiber/fiber/v2"

	"github.com/granary-dev/granary/access"
	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/cluster"
	"github.com/granary-dev/granary/cluster/peer"
	"github.com/granary-dev/granary/store"
)

// PeerOptions make a node a cluster member.
type PeerOptions struct {
	Self   cluster.Member
	Secret []byte
	// Copies keeps the write-back copies other members send; nil
	// refuses them.
	Copies store.Copies
	// Node and Client, if set, are the cluster view /_granary/status
	// reports on and the client it asks the members with.
	Node   *cluster.Node
	Client *peer.Client
	// RequireClientCert refuses (peer.CodeCertRequired) every
	// peer call whose connection did not present a client certificate
	// that Options.TLS verified: mutual TLS between members.
	RequireClientCert bool
}

// peerStatus answers a verified member's status call: the caller it acts
// for was authorized on that member, so this node shows everything.
func (s *Server) peerStatus(c *fiber.Ctx) error {
	r := requestOf(c)
	r.policy = access.Unrestricted
	return s.nodeStatus(c, r)
}

// newPeerHandler is the peer protocol's handler for s, nil if s is not in
// a cluster.
func (s *Server) newPeerHandler() *peer.Handler {
	p := s.opts.Peer
	if p == nil {
		return nil
	}
	o := peer.HandlerOptions{
		Self: p.Self, Secret: p.Secret, Backend: s.engine.PeerBackend(),
		Status:    s.peerStatus,
		CheckName: checkName,
		Context:   s.baseCtx,
		Logger:    s.log,
	}
	if p.Copies != nil {
		o.Copies = p.Copies
	}
	if p.RequireClientCert {
		o.VerifiedCert = func(c *fiber.Ctx) bool {
			st := connState(c.Context().Conn())
			return st != nil && len(st.VerifiedChains) > 0
		}
	}
	return peer.NewHandler(o)
}

// checkName checks a bucket name (key "") or an object key as an S3
// request's.
func checkName(bucket, key string) error {
	if key == "" {
		return checkBucket(bucket)
	}
	return checkKey(key)
}

// servePeer hands a peer call to the protocol's handler.
func (s *Server) servePeer(c *fiber.Ctx, r *request) error {
	r.op = opPeer
	if s.peer == nil {
		return s3err.New(s3err.AccessDenied, "this node is not in a cluster")
	}
	r.bucket, r.key = peer.Target(c)
	var body io.Reader // nil, not a nil *bodyReader, without a body
	if stream := c.Context().RequestBodyStream(); stream != nil {
		r.body = newBodyReader(stream, int64(c.Request().Header.ContentLength()), c.Context().Conn(), s.opts.IOTimeout)
		body = r.body
	}
	s.peer.Serve(c, body)
	return nil
}
