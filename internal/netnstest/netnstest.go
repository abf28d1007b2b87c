// Package netnstest makes separate network hosts for tests out of Linux
// network namespaces: each host is a namespace with one interface on a
// private /24 behind a bridge (itself in a namespace of its own, the
// switch), and the test process is on the same segment through a link
// from the root namespace. A host's link can be cut and healed: its
// packets then vanish (no reset, no refusal), as on a partitioned network.
// Everything is made by the test and removed when it ends. It needs root
// and iproute2; a refusal fails the test, it is never skipped.
package netnstest

import (
	"crypto/rand"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Net is one private segment: the switch, the test's link and the hosts.
type Net struct {
	id     string // short, unique: names the namespaces and interfaces
	subnet string // "10.213.N": the /24's first three octets
	sw     string // the switch's namespace

	mu    sync.Mutex // guards hosts
	hosts int        // hosts made so far (the next host's number)
}

// Host is a namespace on the segment.
type Host struct {
	NS   string // the namespace's name
	IP   string // its address
	port string // its link's end at the switch
	net  *Net
}

// ip runs `ip args...`; a failure fails the test with ip's output.
func ip(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("netnstest: ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// New makes a segment: the switch with its bridge, and the test's link
// to it (the test's address is .254). It is removed when t ends.
func New(t testing.TB) *Net {
	t.Helper()
	n := &Net{}
	for attempt := 0; ; attempt++ {
		if attempt == 100 {
			t.Fatal("netnstest: no free 10.213.N.0/24 found in 100 tries")
		}
		var b [2]byte
		if _, err := rand.Read(b[:]); err != nil {
			t.Fatal(err)
		}
		n.id, n.subnet = fmt.Sprintf("%04x", uint16(b[0])<<8|uint16(b[1])), fmt.Sprintf("10.213.%d", 1+int(b[1])%250)
		// A subnet another segment uses (one running, or left by a test
		// process that was killed) is not taken.
		out, err := exec.Command("ip", "-o", "addr", "show", "to", n.subnet+".0/24").Output()
		if err != nil {
			t.Fatalf("netnstest: ip addr show: %v", err)
		}
		if len(strings.TrimSpace(string(out))) == 0 {
			break
		}
	}
	n.sw = "gr" + n.id + "sw"
	ip(t, "netns", "add", n.sw)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", n.sw).Run() })
	ip(t, "-n", n.sw, "link", "add", "br0", "type", "bridge")
	ip(t, "-n", n.sw, "link", "set", "br0", "up")
	root, rootPort := "gr"+n.id+"t", "gr"+n.id+"ts"
	ip(t, "link", "add", root, "type", "veth", "peer", "name", rootPort, "netns", n.sw)
	t.Cleanup(func() { exec.Command("ip", "link", "del", root).Run() })
	ip(t, "-n", n.sw, "link", "set", rootPort, "master", "br0", "up")
	ip(t, "addr", "add", n.subnet+".254/24", "dev", root)
	ip(t, "link", "set", root, "up")
	return n
}

// TestIP is the test process's address on the segment.
func (n *Net) TestIP() string { return n.subnet + ".254" }

// Host makes a new host on the segment, removed when t ends.
func (n *Net) Host(t testing.TB) *Host {
	t.Helper()
	n.mu.Lock()
	n.hosts++
	k := n.hosts
	n.mu.Unlock()
	if k > 250 {
		t.Fatal("netnstest: more than 250 hosts on one segment")
	}
	h := &Host{NS: fmt.Sprintf("gr%sh%d", n.id, k), IP: fmt.Sprintf("%s.%d", n.subnet, k), net: n}
	h.port = fmt.Sprintf("gr%sp%d", n.id, k)
	ip(t, "netns", "add", h.NS)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", h.NS).Run() })
	ip(t, "-n", h.NS, "link", "set", "lo", "up")
	ip(t, "-n", n.sw, "link", "add", h.port, "type", "veth", "peer", "name", "eth0", "netns", h.NS)
	ip(t, "-n", n.sw, "link", "set", h.port, "master", "br0", "up")
	ip(t, "-n", h.NS, "addr", "add", h.IP+"/24", "dev", "eth0")
	ip(t, "-n", h.NS, "link", "set", "eth0", "up")
	return h
}

// Command is a command that runs in the host's network namespace
// (nsenter, which execs it: the process is the command itself, so
// signals sent to it reach the command). It keeps the test's mount
// namespace: `ip netns exec` would give it a copy of every mount, and a
// FUSE mount another test unmounts meanwhile would live on in that copy
// (its session, and the unmount waiting for it, last as long as the
// command). It is killed if the test process dies first (a test binary
// killed at its timeout runs no cleanup).
func (h *Host) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command("nsenter", append([]string{"--net=/var/run/netns/" + h.NS, "--", name}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// Cut takes the host off the segment: from now on every packet to or
// from it is lost, on connections open or new.
func (h *Host) Cut(t testing.TB) {
	t.Helper()
	ip(t, "-n", h.net.sw, "link", "set", h.port, "down")
}

// Heal puts the host back on the segment.
func (h *Host) Heal(t testing.TB) {
	t.Helper()
	ip(t, "-n", h.net.sw, "link", "set", h.port, "up")
}
