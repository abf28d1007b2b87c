// A test node: the faces cmd/granary assembles (S3, the admin API, the
// monitor) from one set of options, on one Server.
package api

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/granary-dev/granary/access"
	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/ops"
)

// nodeOptions are a node's options: the server's, and those of its
// faces, which share Region, Access and the engine.
type nodeOptions struct {
	Options
	Access           *access.Registry
	Region           string
	Domains          []string
	Gatherer         prometheus.Gatherer
	MetricsToken     func() []byte
	ReadyNeedsOrigin bool
	HistoryEvery     time.Duration
}

// newNode returns a Server over eng answering as a node does, and the
// warm-up jobs its admin API runs (which the caller closes after the
// server's Shutdown).
func newNode(eng *gateway.Engine, o nodeOptions) (*Server, *ops.Ops, error) {
	s3, err := NewS3(S3Options{Engine: eng, Access: o.Access, Region: o.Region, Domains: o.Domains})
	if err != nil {
		return nil, nil, err
	}
	mon, err := NewMonitor(MonitorOptions{Engine: eng, Region: o.Region, Gatherer: o.Gatherer,
		MetricsToken: o.MetricsToken, ReadyNeedsOrigin: o.ReadyNeedsOrigin, HistoryEvery: o.HistoryEvery})
	if err != nil {
		return nil, nil, err
	}
	jobs, err := ops.New(eng, ops.Options{Registerer: o.Registerer, Logger: o.Logger})
	if err != nil {
		return nil, nil, err
	}
	admin, err := NewAdmin(AdminOptions{S3: s3, Ops: jobs, History: mon})
	if err == nil {
		var srv *Server
		if srv, err = New(o.Options, Faces{S3: s3, Admin: admin, Monitor: mon}); err == nil {
			return srv, jobs, nil
		}
	}
	jobs.Close()
	return nil, nil, err
}
