// Owner routing for clients that ask for it: a GET sent with
//
//	X-Granary-Route: owner
//
// to a member that does not own the chunk the read starts in is answered
// 307 TemporaryRedirect, its Location the same request path-style at the
// member that owns that chunk (X-Granary-Owner names it), the path
// escaped as signatures have it, so a client that signs the URL as it
// finds it (boto3) signs what the owner checks. The client sends
// the request again there, signed for that host, and the cluster reads the
// chunk once, at its owner, instead of relaying it through this node. A
// client that does not ask is never redirected: S3 SDKs do not follow
// redirects by themselves (clients/python/granary_route.py makes boto3
// do so).
package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/api/sigv4"
	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/internal/ring"
)

// Owner routing's headers.
const (
	routeHeader = "X-Granary-Route" // a client's ask: "owner"
	ownerHeader = "X-Granary-Owner" // the member a redirect names
)

// redirectToOwner answers the GET with a redirect to the owner of the
// chunk it starts in, if the client asked for one and this node would
// relay that chunk; it reports whether it did (the error to return then).
// A presigned request is served here: its signature names this host.
func (s objects) redirectToOwner(c *fiber.Ctx, r *request, rng gateway.Range, kind rangeKind) (bool, error) {
	h := &c.Request().Header
	ask := h.Peek(routeHeader)
	if len(ask) == 0 || !asciiEqualFold(trimSpace(ask), "owner") {
		return false, nil
	}
	var off int64
	switch kind {
	case rangeNone:
	case rangeValid:
		if rng.Suffix > 0 {
			return false, nil // where it starts depends on the size
		}
		off = rng.Start
	default:
		return false, nil
	}
	args := c.Request().URI().QueryArgs()
	if args.Has("X-Amz-Signature") || args.Has("Signature") || args.Has("partNumber") {
		return false, nil
	}
	m, ok := s.engine.OwnerOf(r.bucket, r.key, off)
	if !ok || !ring.Routable(m.Addr) {
		return false, nil
	}
	resp := &c.Response().Header
	resp.SetBytesV("Location", ownerLocation(c, r, m.Addr))
	resp.Set(ownerHeader, m.ID)
	return true, s3err.New(s3err.TemporaryRedirect, "")
}

// ownerLocation is the request, path-style, at addr: the scheme it came
// with, the path escaped as a signature's canonical URI has it (a client
// that signs the URL as it finds it, boto3, signs what addr checks), the
// query as sent.
func ownerLocation(c *fiber.Ctx, r *request, addr string) []byte {
	loc := make([]byte, 0, 16+len(addr)+3*(len(r.bucket)+len(r.key)))
	loc = append(loc, "http"...)
	if connState(c.Context().Conn()) != nil {
		loc = append(loc, 's')
	}
	loc = append(append(loc, "://"...), addr...)
	loc = sigv4.AppendEscapedPath(loc, "/"+r.bucket+"/"+r.key)
	if q := c.Request().URI().QueryString(); len(q) > 0 {
		loc = append(append(loc, '?'), q...)
	}
	return loc
}
