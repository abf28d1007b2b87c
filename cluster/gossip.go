// Gossip membership over hashicorp/memberlist: nodes join through any
// live member, and a node that stops answering drops out by itself.
package cluster

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/rs/zerolog"
)

// GossipOptions configure a Gossip membership.
type GossipOptions struct {
	// Self is this node; its Addr (the S3 listener) travels in the
	// gossip metadata, so peers learn where to send peer requests.
	Self Member
	// Bind is the host:port gossip listens on (TCP and UDP).
	Bind string
	// Advertise, if set, is the host:port others reach gossip at
	// (default: Bind).
	Advertise string
	// Join lists gossip addresses (host:port) of members to join; empty
	// starts a new cluster. When none answers, joining is retried in the
	// background (with backoff, up to a minute apart) until one does.
	Join []string
	// Secret is the cluster secret: gossip is encrypted and authenticated
	// with a key derived from it, so a node without it cannot join.
	Secret []byte
	// ProbeInterval tunes failure detection (how often a member is
	// probed); 0 means 1s. A dead member drops out after a few intervals.
	ProbeInterval time.Duration
	Logger        zerolog.Logger
}

// Join retry backoff: the first retry comes joinRetryMin after the failed
// attempt, each next one twice as late, never more than joinRetryMax.
const (
	joinRetryMin = 200 * time.Millisecond
	joinRetryMax = time.Minute
	// leaveTimeout bounds how long Close waits for the leave broadcast.
	leaveTimeout = time.Second
)

// Gossip is a Membership kept by memberlist.
//
// Members is not read from memberlist.Members (which hands out pointers
// into state memberlist keeps mutating) but from a copy kept by the event
// delegate, which memberlist calls under its own node lock.
type Gossip struct {
	ml     *memberlist.Memberlist
	events *gossipEvents
	log    zerolog.Logger
	addr   string // host:port others join at, fixed once bound

	stop          chan struct{} // closed by Close: ends the join retry and reconnects
	joinDone      chan struct{} // closed when the join retry has ended (or never ran)
	reconnectDone chan struct{} // closed when the reconnect loop has ended

	closeOnce sync.Once
	closeErr  error

	downMu sync.Mutex // guards down
	// down: memberlist was shut down (by Close or kill). memberlist's Leave
	// panics after Shutdown, so Close leaves only while !down.
	down bool
}

var _ Membership = (*Gossip)(nil)

// NewGossip starts gossiping on opts.Bind and joins opts.Join.
//
// A first join attempt is made before returning, so a node whose seeds
// answer starts with the cluster's membership; if none answers, NewGossip
// still succeeds and retries in the background. That first attempt may
// take up to memberlist's TCP timeout (10 s) per unreachable seed.
func NewGossip(opts GossipOptions) (*Gossip, error) {
	conf, events, err := gossipConfig(opts)
	if err != nil {
		return nil, err
	}
	ml, err := memberlist.Create(conf)
	if err != nil {
		return nil, fmt.Errorf("cluster: gossip on %s: %w", opts.Bind, err)
	}
	g := &Gossip{
		ml:            ml,
		events:        events,
		log:           opts.Logger,
		addr:          ml.LocalNode().Address(),
		stop:          make(chan struct{}),
		joinDone:      make(chan struct{}),
		reconnectDone: make(chan struct{}),
	}
	go g.reconnect(reconnectEvery(opts.ProbeInterval))
	if len(opts.Join) == 0 || g.join(opts.Join) {
		close(g.joinDone)
		return g, nil
	}
	go g.retryJoin(slices.Clone(opts.Join))
	return g, nil
}

// gossipConfig validates opts and turns them into a memberlist config
// whose delegates feed the returned events.
func gossipConfig(opts GossipOptions) (*memberlist.Config, *gossipEvents, error) {
	if opts.Self.ID == "" {
		return nil, nil, errors.New("cluster: gossip needs Self.ID")
	}
	if len(opts.Secret) == 0 {
		return nil, nil, errors.New("cluster: gossip needs a cluster secret")
	}
	if !validPeerAddr(opts.Self.Addr) {
		return nil, nil, fmt.Errorf("cluster: gossip: Self.Addr %q is not host:port", opts.Self.Addr)
	}
	meta, err := json.Marshal(gossipMeta{Addr: opts.Self.Addr, Leaving: true}) // its longest form
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: gossip metadata: %w", err)
	}
	if len(meta) > memberlist.MetaMaxSize {
		return nil, nil, fmt.Errorf("cluster: gossip: Self.Addr %q too long", opts.Self.Addr)
	}

	conf := memberlist.DefaultLANConfig()
	conf.Name = opts.Self.ID
	if err := setAddrs(conf, opts.Bind, opts.Advertise); err != nil {
		return nil, nil, err
	}
	key := sha256.Sum256(opts.Secret)
	conf.SecretKey = key[:] // 32 bytes: AES-256
	setTiming(conf, opts.ProbeInterval)

	events := &gossipEvents{
		self:    gossipMeta{Addr: opts.Self.Addr},
		log:     opts.Logger,
		members: make(map[string]string),
		leaving: make(map[string]bool),
		dead:    make(map[string]deadMember),
		back:    make(chan string, 16),
		changes: make(chan struct{}, 1),
	}
	conf.Delegate = events
	conf.Events = events
	conf.Logger = log.New(zerologWriter{opts.Logger}, "", 0)
	return conf, events, nil
}

// setTiming sets failure detection from the probe interval p (0: 1s).
//
// A member that stops answering is probed by some live member within about
// one interval (each member probes one other per interval, and all of them
// are probing), fails that probe after ProbeTimeout plus the indirect
// probes up to the end of the interval, and is then suspect for
// SuspicionMult*p (scaled by log10 of the cluster size for clusters of 10
// or more) up to SuspicionMaxTimeoutMult times that if no other member
// confirms the suspicion. With p = 1s and a small cluster: suspect after
// 1-2 s, dead 3-6 s later, so it drops out of Members after about 4-8 s;
// gossip (every GossipInterval) then carries the verdict to the rest. A
// member that leaves (Close) is gone from the others in a gossip round or
// two. Suspect members still count as alive.
func setTiming(conf *memberlist.Config, p time.Duration) {
	if p <= 0 {
		p = time.Second
	}
	conf.ProbeInterval = p
	conf.ProbeTimeout = min(p/2, 500*time.Millisecond) // an RTT on a LAN; must be < p
	conf.SuspicionMult = 3
	conf.SuspicionMaxTimeoutMult = 2
	conf.GossipInterval = 200 * time.Millisecond
}

// setAddrs sets where memberlist binds and what it advertises. Hosts must
// be IP literals (memberlist does not resolve them); an empty bind host
// means all interfaces, and then memberlist picks the advertised IP.
func setAddrs(conf *memberlist.Config, bind, advertise string) error {
	host, port, err := splitIPPort(bind)
	if err != nil {
		return fmt.Errorf("cluster: gossip bind: %w", err)
	}
	if host == "" {
		host = "0.0.0.0"
	}
	conf.BindAddr, conf.BindPort = host, port
	// With BindPort 0, memberlist replaces AdvertisePort by the bound port.
	conf.AdvertiseAddr, conf.AdvertisePort = "", port
	if ip := net.ParseIP(host); !ip.IsUnspecified() {
		conf.AdvertiseAddr = host
	}
	if advertise == "" {
		return nil
	}
	host, port, err = splitIPPort(advertise)
	if err != nil || host == "" {
		return fmt.Errorf("cluster: gossip advertise %q: need ip:port", advertise)
	}
	conf.AdvertiseAddr, conf.AdvertisePort = host, port
	return nil
}

// splitIPPort parses "ip:port" (ip may be empty; port 0..65535).
func splitIPPort(hostport string) (string, int, error) {
	host, portStr, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("port in %q: %w", hostport, err)
	}
	if host != "" && net.ParseIP(host) == nil {
		return "", 0, fmt.Errorf("host in %q is not an IP address", hostport)
	}
	return host, int(port), nil
}

// Addr returns the gossip host:port others can join this node at (with
// the real port when Bind asked for port 0).
func (g *Gossip) Addr() string { return g.addr }

// Members returns the live members (suspect ones included), this node
// included while it has not left, sorted by ID.
func (g *Gossip) Members() []Member { return g.events.snapshot() }

// Known returns the live members and those that died (not those that
// left) in the last reconnectFor, sorted by ID: `granary status` lists
// the dead as unreachable.
func (g *Gossip) Known() []Member { return g.events.known() }

// Changes receives after membership events (join, leave, update).
func (g *Gossip) Changes() <-chan struct{} { return g.events.changes }

// Close stops joining, says it is leaving and leaves the cluster
// (waiting up to a second for each of the two to go out) and shuts gossip
// down. It is idempotent. If a join
// attempt is in flight, Close waits for it (at most memberlist's TCP
// timeout).
func (g *Gossip) Close() error {
	g.closeOnce.Do(func() {
		close(g.stop)
		<-g.joinDone // no Join may run after Leave
		<-g.reconnectDone
		g.downMu.Lock()
		defer g.downMu.Unlock()
		if g.down {
			return
		}
		g.down = true
		g.events.setLeaving()
		if err := g.ml.UpdateNode(leaveTimeout); err != nil {
			g.log.Debug().Err(err).Msg("gossip: announcing the leave")
		}
		if err := g.ml.Leave(leaveTimeout); err != nil {
			g.log.Warn().Err(err).Msg("gossip: leave")
		}
		if err := g.ml.Shutdown(); err != nil {
			g.closeErr = fmt.Errorf("cluster: gossip shutdown: %w", err)
		}
	})
	return g.closeErr
}

// kill stops gossip without leaving, as if the process died: the others
// must find out by probing. For tests; Close must still be called.
func (g *Gossip) kill() {
	g.downMu.Lock()
	defer g.downMu.Unlock()
	if !g.down {
		g.down = true
		_ = g.ml.Shutdown() // memberlist's Shutdown only logs its errors
	}
}

// join makes one attempt to join any of addrs and reports success.
func (g *Gossip) join(addrs []string) bool {
	n, err := g.ml.Join(addrs)
	if n > 0 {
		g.log.Info().Int("contacted", n).Msg("gossip: joined")
		return true
	}
	g.log.Warn().Err(err).Strs("join", addrs).Msg("gossip: join failed; will retry")
	return false
}

// retryJoin retries joining with backoff until a join succeeds or Close.
func (g *Gossip) retryJoin(addrs []string) {
	defer close(g.joinDone)
	delay := joinRetryMin
	timer := time.NewTimer(delay)
	defer timer.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-timer.C:
		}
		if g.join(addrs) {
			return
		}
		delay = min(2*delay, joinRetryMax)
		timer.Reset(delay)
	}
}

// gossipMeta is the node metadata: JSON, so fields can be added later
// (unknown ones are ignored by older nodes).
type gossipMeta struct {
	Addr string `json:"addr"`
	// Leaving is set by a member shutting down (Close) just before it
	// leaves: its departure is not a death, and it is not reconnected to.
	Leaving bool `json:"leaving,omitempty"`
}

// validPeerAddr: addr is host:port with both parts present.
func validPeerAddr(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	return err == nil && host != "" && port != ""
}

// gossipEvents is memberlist's Delegate (it only supplies this node's
// metadata) and EventDelegate (it keeps the live members). memberlist
// calls the event methods one at a time under its node lock, in order.
type gossipEvents struct {
	self    gossipMeta // this node's metadata (guarded by mu)
	log     zerolog.Logger
	changes chan struct{} // buffer 1, never closed

	mu      sync.Mutex            // guards self, members, leaving and dead
	members map[string]string     // ID -> Addr of alive and suspect members with valid metadata
	leaving map[string]bool       // IDs of members that said they are leaving
	dead    map[string]deadMember // ID -> members that died, to reconnect (reconnect.go)
	back    chan string           // gossip addresses of members that came back, to sync with
}

var (
	_ memberlist.Delegate      = (*gossipEvents)(nil)
	_ memberlist.EventDelegate = (*gossipEvents)(nil)
)

func (e *gossipEvents) NodeMeta(limit int) []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	b, _ := json.Marshal(e.self) // a struct of a string and a bool
	return b
}

// setLeaving marks this node's metadata as leaving.
func (e *gossipEvents) setLeaving() {
	e.mu.Lock()
	e.self.Leaving = true
	e.mu.Unlock()
}

func (e *gossipEvents) NotifyMsg([]byte)                           {}
func (e *gossipEvents) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (e *gossipEvents) LocalState(join bool) []byte                { return nil }
func (e *gossipEvents) MergeRemoteState(buf []byte, join bool)     {}

func (e *gossipEvents) NotifyJoin(n *memberlist.Node)   { e.upsert(n) }
func (e *gossipEvents) NotifyUpdate(n *memberlist.Node) { e.upsert(n) }

// NotifyLeave forgets a member that died or left; one that died (it did
// not say it was leaving) is remembered, to reconnect to and to list.
func (e *gossipEvents) NotifyLeave(n *memberlist.Node) {
	e.mu.Lock()
	if e.leaving[n.Name] {
		delete(e.leaving, n.Name)
	} else if addr, ok := e.members[n.Name]; ok {
		e.dead[n.Name] = deadMember{addr: addr, gossip: n.Address(), since: time.Now()}
	}
	delete(e.members, n.Name)
	e.mu.Unlock()
	e.notify()
}

// upsert records n if its metadata is valid, and forgets it otherwise.
func (e *gossipEvents) upsert(n *memberlist.Node) {
	var m gossipMeta
	err := json.Unmarshal(n.Meta, &m)
	valid := err == nil && validPeerAddr(m.Addr)
	e.mu.Lock()
	if _, was := e.dead[n.Name]; was {
		delete(e.dead, n.Name)
		e.cameBack(n.Address())
	}
	if m.Leaving {
		e.leaving[n.Name] = true
	}
	if valid {
		e.members[n.Name] = m.Addr
	} else {
		delete(e.members, n.Name)
	}
	e.mu.Unlock()
	if !valid {
		e.log.Warn().Str("node", n.Name).Msg("gossip: member without valid metadata ignored")
	}
	e.notify()
}

// notify signals Changes without blocking: a pending signal already
// covers this change.
func (e *gossipEvents) notify() {
	select {
	case e.changes <- struct{}{}:
	default:
	}
}

// snapshot returns the members sorted by ID.
func (e *gossipEvents) snapshot() []Member {
	e.mu.Lock()
	out := make([]Member, 0, len(e.members))
	for id, addr := range e.members {
		out = append(out, Member{ID: id, Addr: addr})
	}
	e.mu.Unlock()
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// zerologWriter turns memberlist's log lines ("[LEVEL] memberlist: msg")
// into zerolog debug events, so memberlist never writes to stderr.
type zerologWriter struct{ log zerolog.Logger }

func (w zerologWriter) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	level := ""
	if strings.HasPrefix(line, "[") {
		if end := strings.IndexByte(line, ']'); end > 0 {
			level, line = line[1:end], strings.TrimSpace(line[end+1:])
		}
	}
	w.log.Debug().Str("component", "memberlist").Str("mlevel", level).Msg(line)
	return len(p), nil
}
