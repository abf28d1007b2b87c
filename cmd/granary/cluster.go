// Cluster settings of `granary serve` (--node-id with --peers or --join,
// the cluster secret, --owners) and the wiring of a node's cluster
// parts: membership, ring, peer client, write-back copies.
package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/api"
	"go.yaml.in/yaml/v3"

	"github.com/granary-dev/granary/cluster"
	"github.com/granary-dev/granary/cluster/peer"
	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/copies"
)

// ClusterConfig holds a node's cluster settings; with no NodeID the node
// runs alone.
type ClusterConfig struct {
	NodeID string `yaml:"node-id"`
	// Peers is the static member list "id=host:port,..." (this node
	// included); Join the gossip addresses to join instead.
	Peers      string `yaml:"peers"`
	Join       string `yaml:"join"`
	GossipBind string `yaml:"gossip-bind"`
	// Advertise is the S3 address other members reach this node at.
	Advertise  string `yaml:"advertise"`
	SecretFile string `yaml:"cluster-secret-file"`
	// Owners is R: how many members own each chunk read through the
	// cluster (written data gets max(R, 2)).
	Owners      int      `yaml:"owners"`
	PeerTimeout Duration `yaml:"peer-timeout"`
	// LegacyReplicas is "replicas:", the old name of owners, in a file;
	// loadFile moves it to Owners.
	LegacyReplicas *int `yaml:"replicas,omitempty"`
}

// minSecret is the shortest cluster secret accepted.
const minSecret = 16

var clusterSettings = []setting{
	stringSetting("node-id", "this node's `ID` in a cluster (unique, stable across restarts); with --peers or --join",
		func(c *Config) *string { return &c.Cluster.NodeID }),
	stringSetting("peers", "static cluster members, `id=host:port,...` with every node's S3 address (this node included); peer traffic uses the same listener",
		func(c *Config) *string { return &c.Cluster.Peers }),
	stringSetting("join", "gossip addresses `host:port,...` of cluster members to join (hashicorp/memberlist; nodes may come and go); empty with --gossip-bind starts a new cluster",
		func(c *Config) *string { return &c.Cluster.Join }),
	stringSetting("gossip-bind", "`host:port` gossip listens on (TCP and UDP) with --join; default the --listen host, port 7946",
		func(c *Config) *string { return &c.Cluster.GossipBind }),
	stringSetting("advertise", "`host:port` other members reach this node's S3 listener at (default --listen; required when it listens on all interfaces)",
		func(c *Config) *string { return &c.Cluster.Advertise }),
	stringSetting("cluster-secret-file", "`file` holding the cluster secret (at least 16 bytes) that authenticates peer traffic and encrypts gossip; or GRANARY_CLUSTER_SECRET",
		func(c *Config) *string { return &c.Cluster.SecretFile }),
	{
		name: "owners", usage: "R, the `number` of owners of each chunk read through the cluster (1..5); data written through it gets max(R, 2)",
		get: func(c Config) string { return strconv.Itoa(c.Cluster.Owners) },
		set: setOwners,
	},
	{name: "replicas", usage: "the old name of --owners (`number`)", get: func(Config) string { return "" }, set: setOwners},
	{
		name: "peer-timeout", usage: "how long a peer may take to answer, or go silent mid-transfer, before the next owner or the origin is tried (a Go `duration`)",
		get: func(c Config) string { return c.Cluster.PeerTimeout.String() },
		set: func(c *Config, v string) error { d, err := ParseDuration(v); c.Cluster.PeerTimeout = d; return err },
	},
}

func init() { serveSettings = append(serveSettings, clusterSettings...) }

func setOwners(c *Config, v string) error {
	n, err := strconv.Atoi(v)
	c.Cluster.Owners = n
	return err
}

// takeLegacyReplicas moves a file's "replicas:" to Owners; file is the
// file's root node, which must not also say "owners:".
func (c *ClusterConfig) takeLegacyReplicas(file *yaml.Node) error {
	if c.LegacyReplicas == nil {
		return nil
	}
	if hasTopKey(file, "owners") {
		return errors.New("replicas: the old name of owners; give one of them")
	}
	c.Owners, c.LegacyReplicas = *c.LegacyReplicas, nil
	return nil
}

// enabled reports whether the node is a cluster member.
func (c ClusterConfig) enabled() bool { return c.NodeID != "" }

// check validates the settings (listen is the node's --listen).
func (c ClusterConfig) check(listen string) error {
	switch {
	case c.NodeID == "" && (c.Peers != "" || c.Join != ""):
		return errors.New("node-id: required with --peers or --join")
	case c.NodeID != "" && c.Peers != "" && c.Join != "":
		return errors.New("peers, join: give one (a static list or gossip)")
	case c.Owners < 1 || c.Owners > 5:
		return fmt.Errorf("owners: %d out of 1..5", c.Owners)
	case c.PeerTimeout <= 0:
		return errors.New("peer-timeout: must be positive")
	case !c.enabled():
		return nil
	}
	if c.Peers != "" {
		peers, err := parsePeers(c.Peers)
		if err != nil {
			return err
		}
		if _, ok := findMember(peers, c.NodeID); !ok {
			return fmt.Errorf("peers: this node (%s) is not in the list", c.NodeID)
		}
		return nil
	}
	_, err := c.advertised(listen)
	return err
}

// parsePeers parses "id=host:port,...".
func parsePeers(s string) ([]cluster.Member, error) {
	var out []cluster.Member
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || id == "" || seen[id] {
			return nil, fmt.Errorf("peers: %q is not a new id=host:port", item)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("peers: %s: %w", id, err)
		}
		seen[id] = true
		out = append(out, cluster.Member{ID: id, Addr: addr})
	}
	return out, nil
}

func findMember(ms []cluster.Member, id string) (cluster.Member, bool) {
	for _, m := range ms {
		if m.ID == id {
			return m, true
		}
	}
	return cluster.Member{}, false
}

// advertised is the S3 address this node gives its gossip peers.
func (c ClusterConfig) advertised(listen string) (string, error) {
	addr := c.Advertise
	if addr == "" {
		addr = listen
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("advertise: %w", err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return "", fmt.Errorf("advertise: %s listens on every interface: say which address peers reach it at", addr)
	}
	return addr, nil
}

// gossipBind is --gossip-bind, or the listen host on port 7946.
func (c ClusterConfig) gossipBind(listen string) string {
	if c.GossipBind != "" {
		return c.GossipBind
	}
	host, _, _ := net.SplitHostPort(listen)
	return net.JoinHostPort(host, "7946")
}

// clusterSecret reads the secret from GRANARY_CLUSTER_SECRET or the file.
func clusterSecret(c ClusterConfig, getenv Getenv) ([]byte, error) {
	v, _ := getenv("GRANARY_CLUSTER_SECRET")
	if c.SecretFile != "" {
		if v != "" {
			return nil, errors.New("cluster secret: GRANARY_CLUSTER_SECRET and --cluster-secret-file are both set; set one")
		}
		b, err := os.ReadFile(c.SecretFile)
		if err != nil {
			return nil, fmt.Errorf("cluster secret: %w", err)
		}
		v = strings.TrimRight(string(b), " \t\r\n")
	}
	if len(v) < minSecret {
		return nil, fmt.Errorf("cluster secret: a cluster needs one of at least %d bytes (GRANARY_CLUSTER_SECRET or --cluster-secret-file)", minSecret)
	}
	return []byte(v), nil
}

// clusterParts are a member node's cluster pieces, closed in order.
type clusterParts struct {
	node   *cluster.Node
	member cluster.Membership
	copies *copies.Store
	client *peer.Client
	secret []byte
	mtls   bool // peer calls need a verified client certificate
}

// nodePeers is the cluster as the engine sees it: the node's view and
// the peer client.
type nodePeers struct {
	*cluster.Node
	client *peer.Client
}

func (p nodePeers) Client() gateway.PeerClient { return p.client }

// peers is the cluster for the engine.
func (p *clusterParts) peers() gateway.Peers { return nodePeers{p.node, p.client} }

// peerOptions are the API's peer face settings: eng answers the calls,
// admin the status calls.
func (p *clusterParts) peerOptions(eng *gateway.Engine, admin *api.Admin) api.PeerOptions {
	return api.PeerOptions{Self: p.node.Self(), Secret: p.secret, Engine: eng, Copies: p.copies, Admin: admin,
		RequireClientCert: p.mtls}
}

// membersGauge is granary_cluster_members: the live members this node
// sees, itself included (a drop is a member lost).
func (p *clusterParts) membersGauge() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "granary_cluster_members", Help: "Live members of the cluster as this node sees them, itself included.",
	}, func() float64 { return float64(len(p.node.Members())) })
}

func (p *clusterParts) Close() error {
	p.node.Close()
	err := p.member.Close()
	p.client.Close()
	return errors.Join(err, p.copies.Close())
}

// openCluster builds the cluster parts of a member node; origin is the
// real origin (where copies of dead members' write-back objects go);
// certs, the node's pair if it serves HTTPS (so do its members).
func openCluster(cfg Config, secret []byte, origin store.Origin, certs *certFiles, log zerolog.Logger) (*clusterParts, error) {
	c := cfg.Cluster
	p := &clusterParts{secret: secret, mtls: cfg.PeerMTLS,
		client: peer.NewClient(c.NodeID, secret, time.Duration(c.PeerTimeout))}
	if certs != nil {
		tc, err := peerTLS(cfg, certs)
		if err != nil {
			return nil, usageError{err}
		}
		p.client.WithTLS(tc)
	}
	log = log.With().Str("component", "cluster").Str("node", c.NodeID).Logger()
	self, err := p.openMembership(cfg, secret, log)
	if err != nil {
		p.client.Close()
		return nil, err
	}
	if p.copies, err = copies.Open(filepath.Join(cfg.DataDir, "replicas"), origin, log); err != nil {
		p.member.Close()
		p.client.Close()
		return nil, fmt.Errorf("write-back copies: %w", err)
	}
	p.node, err = cluster.NewNode(cluster.NodeOptions{Self: self, Membership: p.member, Client: p.client,
		Copies: p.copies, Logger: log})
	if err != nil {
		p.member.Close()
		p.client.Close()
		p.copies.Close()
		return nil, err
	}
	return p, nil
}

// openMembership starts the static or gossip membership; it returns
// this node as members see it.
func (p *clusterParts) openMembership(cfg Config, secret []byte, log zerolog.Logger) (cluster.Member, error) {
	c := cfg.Cluster
	if c.Peers != "" {
		peers, _ := parsePeers(c.Peers) // checked by Normalize
		self, _ := findMember(peers, c.NodeID)
		p.member = cluster.NewStatic(self, peers, p.client, 0, log)
		return self, nil
	}
	addr, _ := c.advertised(cfg.Listen) // checked by Normalize
	self := cluster.Member{ID: c.NodeID, Addr: addr}
	var join []string
	if c.Join != "" {
		join = strings.Split(c.Join, ",")
	}
	g, err := cluster.NewGossip(cluster.GossipOptions{Self: self, Bind: c.gossipBind(cfg.Listen), Join: join,
		Secret: secret, Logger: log})
	if err != nil {
		return self, fmt.Errorf("gossip: %w", err)
	}
	p.member = g
	return self, nil
}
