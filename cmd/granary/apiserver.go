// The API server of a node: its faces (S3, the admin API, the monitor's
// open pages, and the peer protocol for a cluster member), each built
// from the node's parts, assembled on one api.Server.
package main

import (
	"crypto/tls"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/access"
	"github.com/granary-dev/granary/api"
	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/ops"
)

// serverParts are what a node's API server is built on.
type serverParts struct {
	eng   *gateway.Engine
	jobs  *ops.Ops
	keys  *access.Registry
	cl    *clusterParts // nil for a node alone
	reg   *prometheus.Registry
	token func() []byte // api.MonitorOptions.MetricsToken
	tls   *tls.Config   // nil: plain HTTP
}

// buildServer builds the faces of a node and the server that answers them.
func buildServer(cfg Config, p serverParts, log zerolog.Logger) (*api.Server, error) {
	s3, err := api.NewS3(api.S3Options{Engine: p.eng, Access: p.keys, Region: cfg.Region, Domains: cfg.Domains})
	if err != nil {
		return nil, err
	}
	monitor, err := api.NewMonitor(api.MonitorOptions{Engine: p.eng, Region: cfg.Region, Gatherer: p.reg,
		MetricsToken: p.token, ReadyNeedsOrigin: !cfg.ServeStaleWhenDown})
	if err != nil {
		return nil, err
	}
	ao := api.AdminOptions{S3: s3, Ops: p.jobs, History: monitor}
	if p.cl != nil {
		ao.Self, ao.Node, ao.Client = p.cl.node.Self(), p.cl.node, p.cl.client
	}
	admin, err := api.NewAdmin(ao)
	if err != nil {
		return nil, err
	}
	faces := api.Faces{S3: s3, Admin: admin, Monitor: monitor}
	if p.cl != nil {
		if faces.Peer, err = api.NewPeer(p.cl.peerOptions(p.eng, admin)); err != nil {
			return nil, err
		}
	}
	return api.New(api.Options{
		TLS: p.tls, Registerer: p.reg, MaxConnsPerIP: cfg.ConnsPerIP(), DisableLane: !cfg.GetLane,
		ServerHeader: serverHeaderPrefix + Version(),
		Logger:       log.With().Str("component", "api").Logger(),
	}, faces)
}
