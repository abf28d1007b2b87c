// Tests for Gossip: real memberlist nodes on loopback, joined, left,
// killed, refused; every wait is a poll with a deadline.
package cluster

import (
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/granary-dev/granary/internal/goroutines"
	"github.com/granary-dev/granary/internal/syncbuf"
	"github.com/hashicorp/memberlist"
	"github.com/rs/zerolog"
)

const testSecret = "granary-test-secret"

// testOpts: a node on 127.0.0.1 with an ephemeral gossip port and a
// made-up S3 address derived from its ID.
func testOpts(id string, join ...string) GossipOptions {
	return GossipOptions{
		Self:          Member{ID: id, Addr: s3Addr(id)},
		Bind:          "127.0.0.1:0",
		Join:          join,
		Secret:        []byte(testSecret),
		ProbeInterval: time.Second,
		Logger:        zerolog.Nop(),
	}
}

// s3Addr is a made-up S3 address for node id, distinct per node.
func s3Addr(id string) string { return id + ".s3.test:9000" }

func nodeWithMeta(name, meta string) *memberlist.Node {
	return &memberlist.Node{Name: name, Meta: []byte(meta)}
}

// startGossip starts a node and closes it when the test ends.
func startGossip(t *testing.T, opts GossipOptions) *Gossip {
	t.Helper()
	g, err := NewGossip(opts)
	if err != nil {
		t.Fatalf("NewGossip(%s): %v", opts.Self.ID, err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("Close(%s): %v", opts.Self.ID, err)
		}
	})
	return g
}

// waitFor polls cond until it holds or limit passes, and returns how long
// it took; it fails the test on timeout.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("after %v: %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
	return time.Since(start)
}

func ids(ms []Member) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func hasID(g *Gossip, id string) bool { return slices.Contains(ids(g.Members()), id) }

// startThree starts a, b, c with b and c joining through a, and waits
// until every node lists all three.
func startThree(t *testing.T) (a, b, c *Gossip) {
	t.Helper()
	a = startGossip(t, testOpts("a"))
	b = startGossip(t, testOpts("b", a.Addr()))
	c = startGossip(t, testOpts("c", a.Addr()))
	want := []Member{{"a", s3Addr("a")}, {"b", s3Addr("b")}, {"c", s3Addr("c")}}
	for _, g := range []*Gossip{a, b, c} {
		waitFor(t, 10*time.Second, "all three members listed", func() bool {
			return slices.Equal(g.Members(), want)
		})
	}
	return a, b, c
}

func TestGossipThreeNodes(t *testing.T) {
	a, _, _ := startThree(t)
	if host, port, err := net.SplitHostPort(a.Addr()); err != nil || host != "127.0.0.1" || port == "0" {
		t.Errorf("Addr() = %q, want 127.0.0.1 and the bound port", a.Addr())
	}
}

func TestGossipSingleNodeListsItself(t *testing.T) {
	a := startGossip(t, testOpts("solo"))
	if got, want := a.Members(), []Member{{"solo", s3Addr("solo")}}; !slices.Equal(got, want) {
		t.Fatalf("Members() = %v, want %v", got, want)
	}
}

func TestGossipChangesOnJoin(t *testing.T) {
	a := startGossip(t, testOpts("a"))
	select { // drop the signal for a's own join
	case <-a.Changes():
	default:
	}
	startGossip(t, testOpts("b", a.Addr()))
	select {
	case <-a.Changes():
	case <-time.After(5 * time.Second):
		t.Fatal("no Changes signal after b joined")
	}
	if !hasID(a, "b") {
		t.Fatalf("after the Changes signal a lists %v, want b in it", ids(a.Members()))
	}
}

func TestGossipLeave(t *testing.T) {
	a, b, c := startThree(t)
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if d := time.Since(start); d >= 2*leaveTimeout {
		t.Errorf("Close took %v: the leaving and leave broadcasts timed out", d)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for _, g := range []*Gossip{a, b} {
		waitFor(t, 3*time.Second, "left member dropped", func() bool { return !hasID(g, "c") })
		if got := ids(g.Known()); !slices.Equal(got, []string{"a", "b"}) {
			t.Fatalf("after c left, Known lists %v: a member that left is not dead", got)
		}
	}
	t.Logf("leave seen by both others %v after Close began", time.Since(start))
}

func TestGossipKilledMemberDropsOut(t *testing.T) {
	a, b, c := startThree(t)
	c.kill()
	start := time.Now()
	for _, g := range []*Gossip{a, b} {
		waitFor(t, 12*time.Second, "killed member dropped", func() bool { return !hasID(g, "c") })
	}
	t.Logf("killed member gone from both survivors after %v", time.Since(start))
	if got := ids(a.Members()); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("a lists %v, want [a b]", got)
	}
	if got := a.Known(); !slices.Equal(got, []Member{{"a", s3Addr("a")}, {"b", s3Addr("b")}, {"c", s3Addr("c")}}) {
		t.Fatalf("a knows %v, want the dead member c with its address too", got)
	}
}

// reservePort returns a loopback address whose port was free a moment ago.
func reservePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

func TestGossipJoinRetry(t *testing.T) {
	// The seed address must be free while b tries it and bound by a
	// later: another process may take it in between, so a bind failure
	// starts over with another address.
	for attempt := 1; ; attempt++ {
		seed := reservePort(t)
		logs := &syncbuf.Buffer{}
		bOpts := testOpts("b", seed)
		bOpts.Logger = zerolog.New(logs)
		b := startGossip(t, bOpts) // nothing answers at seed yet
		if got := ids(b.Members()); !slices.Equal(got, []string{"b"}) {
			t.Fatalf("before a exists b lists %v", got)
		}
		if !strings.Contains(logs.String(), `"level":"warn"`) {
			t.Errorf("no warning for the failed join; logs: %s", logs.String())
		}
		aOpts := testOpts("a")
		aOpts.Bind = seed
		a, err := NewGossip(aOpts)
		// memberlist words the failure without wrapping it.
		if err != nil && strings.Contains(err.Error(), "address already in use") && attempt < 5 {
			t.Logf("attempt %d: %s was taken meanwhile: %v", attempt, seed, err)
			continue // b is closed when the test ends
		}
		if err != nil {
			t.Fatalf("NewGossip(a): %v", err)
		}
		t.Cleanup(func() { a.Close() })
		if a.Addr() != seed {
			t.Fatalf("a.Addr() = %q, want %q", a.Addr(), seed)
		}
		d := waitFor(t, 10*time.Second, "b joined a by retrying", func() bool {
			return slices.Equal(ids(b.Members()), []string{"a", "b"}) &&
				slices.Equal(ids(a.Members()), []string{"a", "b"})
		})
		t.Logf("retry joined after %v", d)
		return
	}
}

func TestGossipWrongSecretRefused(t *testing.T) {
	logs := &syncbuf.Buffer{}
	aOpts := testOpts("a")
	aOpts.Logger = zerolog.New(logs).Level(zerolog.DebugLevel)
	a := startGossip(t, aOpts)
	evilOpts := testOpts("evil", a.Addr())
	evilOpts.Secret = []byte("another secret")
	evil := startGossip(t, evilOpts)
	// The control: a node with the right secret gets in meanwhile.
	startGossip(t, testOpts("b", a.Addr()))
	waitFor(t, 5*time.Second, "b joined", func() bool { return hasID(a, "b") })

	deadline := time.Now().Add(2 * time.Second) // evil keeps retrying meanwhile
	for time.Now().Before(deadline) {
		if hasID(a, "evil") {
			t.Fatalf("a lists the node with the wrong secret: %v", a.Members())
		}
		if got := ids(evil.Members()); !slices.Equal(got, []string{"evil"}) {
			t.Fatalf("the node with the wrong secret sees %v", got)
		}
		time.Sleep(50 * time.Millisecond) // polling interval
	}
	// Refused for the right reason: a could not decrypt what evil sent.
	if !strings.Contains(logs.String(), "no installed keys could decrypt") {
		t.Errorf("a never failed to decrypt; its logs: %s", logs.String())
	}
}

func TestNewGossipRejectsBadOptions(t *testing.T) {
	cases := map[string]func(*GossipOptions){
		"empty secret":   func(o *GossipOptions) { o.Secret = nil },
		"empty ID":       func(o *GossipOptions) { o.Self.ID = "" },
		"bad Self.Addr":  func(o *GossipOptions) { o.Self.Addr = "nohostport" },
		"bind hostname":  func(o *GossipOptions) { o.Bind = "localhost:0" },
		"bind bad port":  func(o *GossipOptions) { o.Bind = "127.0.0.1:99999" },
		"bad advertise":  func(o *GossipOptions) { o.Advertise = ":7946" },
		"bind no port":   func(o *GossipOptions) { o.Bind = "127.0.0.1" },
		"advertise name": func(o *GossipOptions) { o.Advertise = "example.com:7946" },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			opts := testOpts("x")
			mutate(&opts)
			if g, err := NewGossip(opts); err == nil {
				_ = g.Close()
				t.Fatal("NewGossip succeeded")
			}
		})
	}
}

func TestGossipIgnoresInvalidMetadata(t *testing.T) {
	var e gossipEvents
	e.members = map[string]string{}
	e.changes = make(chan struct{}, 1)
	e.log = zerolog.Nop()
	a := &Gossip{events: &e}
	e.NotifyJoin(nodeWithMeta("ok", `{"addr":"10.0.0.1:9000"}`))
	e.NotifyJoin(nodeWithMeta("junk", `not json`))
	e.NotifyJoin(nodeWithMeta("noport", `{"addr":"10.0.0.2"}`))
	if got, want := a.Members(), []Member{{"ok", "10.0.0.1:9000"}}; !slices.Equal(got, want) {
		t.Fatalf("Members() = %v, want %v", got, want)
	}
	e.NotifyUpdate(nodeWithMeta("ok", `{}`)) // metadata lost: no longer usable
	if got := a.Members(); len(got) != 0 {
		t.Fatalf("Members() = %v after invalid update, want none", got)
	}
}

func TestGossipCloseLeavesNoGoroutines(t *testing.T) {
	base := goroutines.Snapshot()
	func() {
		a, err := NewGossip(testOpts("a"))
		if err != nil {
			t.Fatal(err)
		}
		b, err := NewGossip(testOpts("b", a.Addr()))
		if err != nil {
			t.Fatal(err)
		}
		pending, err := NewGossip(testOpts("p", reservePort(t))) // retrying
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "b joined", func() bool { return hasID(a, "b") })
		for _, g := range []*Gossip{b, pending, a} {
			if err := g.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}()
	if err := goroutines.Leaked(base, 10*time.Second); err != nil {
		t.Fatalf("after Close: %v", err)
	}
}

// A member that dropped out and comes back where it was, knowing no one
// (as after a partition, where each side declared the other dead and
// memberlist stops talking to it), is reconnected to by the others.
func TestGossipReconnectsToAMemberThatDroppedOut(t *testing.T) {
	a, b, c := startThree(t)
	at := c.Addr()
	c.kill()
	for _, g := range []*Gossip{a, b} {
		waitFor(t, 12*time.Second, "killed member dropped", func() bool { return !hasID(g, "c") })
	}
	opts := testOpts("c")
	opts.Bind = at
	back := startGossip(t, opts)
	for name, g := range map[string]*Gossip{"a": a, "b": b, "c": back} {
		waitFor(t, 20*time.Second, "the member that came back listed by "+name, func() bool {
			return slices.Equal(ids(g.Members()), []string{"a", "b", "c"})
		})
	}
}
