// The peer face: package cluster/peer answers the peer protocol; this
// face hands it the calls under peer.Prefix, with the server's connection
// limits, request log and metrics. cmd builds it only for a cluster
// member (a node without it refuses peer calls: faces.go).
package api

import (
	"errors"
	"io"

	"github.com/gofiber/fiber/v2"

	"github.com/granary-dev/granary/cluster"
	"github.com/granary-dev/granary/cluster/peer"
	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/store"
)

// PeerOptions make a node a cluster member. Engine is required.
type PeerOptions struct {
	Self   cluster.Member
	Secret []byte
	// Engine answers the calls about cached data.
	Engine *gateway.Engine
	// Copies keeps the write-back copies other members send; nil
	// refuses them.
	Copies store.Copies
	// Admin, if set, answers members' status calls as its status route
	// does, and cancels its warm-ups for them; nil refuses both.
	Admin *Admin
	// RequireClientCert refuses (peer.CodeCertRequired) every
	// peer call whose connection did not present a client certificate
	// that Options.TLS verified: mutual TLS between members.
	RequireClientCert bool
}

// Peer is the peer face.
type Peer struct {
	*core
	opts    PeerOptions
	handler *peer.Handler // built by mount, on the server's context and log
}

// NewPeer returns the peer face of o.
func NewPeer(o PeerOptions) (*Peer, error) {
	if o.Engine == nil {
		return nil, errors.New("api: the peer face's Engine is required")
	}
	return &Peer{opts: o}, nil
}

// mount builds the protocol's handler for the server of c.
func (p *Peer) mount(c *core) {
	p.core = c
	o := p.opts
	ho := peer.HandlerOptions{
		Self: o.Self, Secret: o.Secret, Backend: o.Engine.PeerBackend(),
		CheckName: checkName,
		Context:   c.baseCtx,
		Logger:    c.log,
	}
	if o.Admin != nil {
		ho.Status = o.Admin.peerStatus
		ho.CancelWarm = o.Admin.peerCancelWarm
	}
	if o.Copies != nil {
		ho.Copies = o.Copies
	}
	if o.RequireClientCert {
		ho.VerifiedCert = func(c *fiber.Ctx) bool {
			st := connState(c.Context().Conn())
			return st != nil && len(st.VerifiedChains) > 0
		}
	}
	p.handler = peer.NewHandler(ho)
}

// checkName checks a bucket name (key "") or an object key as an S3
// request's.
func checkName(bucket, key string) error {
	if key == "" {
		return checkBucket(bucket)
	}
	return checkKey(key)
}

// claims takes the calls under peer.Prefix.
func (p *Peer) claims(c *fiber.Ctx, _ *request) bool { return peer.IsCall(c) }

// serve hands a peer call to the protocol's handler.
func (p *Peer) serve(c *fiber.Ctx, r *request) error {
	r.op = opPeer
	r.bucket, r.key = peer.Target(c)
	var body io.Reader // nil, not a nil *bodyReader, without a body
	if stream := c.Context().RequestBodyStream(); stream != nil {
		r.body = newBodyReader(stream, int64(c.Request().Header.ContentLength()), c.Context().Conn(), p.ioTimeout)
		body = r.body
	}
	p.handler.Serve(c, body)
	return nil
}
