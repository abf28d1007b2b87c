// The router: a Server answers several faces on one listener, each a
// handler of its own (S3, the signed admin API, the monitor's open pages,
// the peer protocol) that cmd builds and New mounts. A request goes to
// the first face that claims it by its path, asked most specific first:
//
//	the monitor    /_granary/console[/...]; GET /healthz, /readyz, /metrics
//	               (unless signed: then the S3 request of that bucket);
//	               a browser's unsigned GET / asking for HTML
//	the peer face  /_granary/peer/...
//	the admin API  the rest of /_granary/...
//	S3             every other path
//
// A face left out of Faces claims nothing, except the peer face: a node
// without one answers peer calls with its refusal (notClustered).
package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/cluster/peer"
)

// face is one protocol the server answers.
type face interface {
	// mount gives the face the server's shared plumbing, once, before
	// the server answers a request.
	mount(c *core)
	// serve answers a request the router gave the face; the server
	// writes an error it returns as an S3 error.
	serve(c *fiber.Ctx, r *request) error
}

// claimer is a face that answers the paths it claims (every face but
// S3, which answers the rest). claims sees a fresh request: its id and
// method are set, nothing else.
type claimer interface {
	face
	claims(c *fiber.Ctx, r *request) bool
}

// runner is a face with work of its own while the server serves (the
// monitor's traffic history): Serve starts it, Shutdown stops it.
type runner interface {
	start()
	stop()
}

// The faces, as the router takes them: a runner not recognised would
// never start (the monitor's history would stay empty).
var (
	_ face    = (*S3)(nil)
	_ claimer = (*Admin)(nil)
	_ claimer = (*Monitor)(nil)
	_ claimer = (*Peer)(nil)
	_ claimer = notClustered{}
	_ runner  = (*Monitor)(nil)
)

// Faces are the handlers a Server answers with. S3 is required; the
// others are served when set.
type Faces struct {
	S3      *S3
	Admin   *Admin
	Monitor *Monitor
	// Peer, if set, makes this node a cluster member; without it, peer
	// calls are refused as calls to a node that is not in a cluster.
	Peer *Peer
}

// claimers are the faces other than S3, in the order they are asked.
func (f Faces) claimers() []claimer {
	var out []claimer
	if f.Monitor != nil {
		out = append(out, f.Monitor)
	}
	if f.Peer != nil {
		out = append(out, f.Peer)
	} else {
		out = append(out, notClustered{})
	}
	if f.Admin != nil {
		out = append(out, f.Admin)
	}
	return out
}

// faceOf is the face that answers c.
func (s *Server) faceOf(c *fiber.Ctx, r *request) face {
	for _, f := range s.faces {
		if f.claims(c, r) {
			return f
		}
	}
	return s.s3
}

// startFaces starts the faces that run while the server serves.
func (s *Server) startFaces() {
	for _, f := range s.faces {
		if rn, ok := f.(runner); ok {
			rn.start()
		}
	}
}

// stopFaces stops them (those never started too: see Monitor.stop).
func (s *Server) stopFaces() {
	for _, f := range s.faces {
		if rn, ok := f.(runner); ok {
			rn.stop()
		}
	}
}

// notClustered answers peer calls on a node that is not in a cluster.
type notClustered struct{}

func (notClustered) mount(*core) {}

func (notClustered) claims(c *fiber.Ctx, _ *request) bool { return peer.IsCall(c) }

func (notClustered) serve(_ *fiber.Ctx, r *request) error {
	r.op = opPeer
	return s3err.New(s3err.AccessDenied, "this node is not in a cluster")
}
