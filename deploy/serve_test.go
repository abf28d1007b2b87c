// The cache tier's granary containers, run for real: their args parse
// with granary's own flags, their budgets fit the container's limits and
// volume, and the node they start answers every probe and the scrape.
package deploy

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestKubernetesServe runs every `granary serve` container of every
// variant.
func TestKubernetesServe(t *testing.T) {
	forEachVariant(t, func(t *testing.T, o *objects) {
		n := 0
		for _, w := range o.workloads() {
			for i, c := range containers(w.pod) {
				if granaryArgs(c) != "serve" {
					continue
				}
				n++
				rc := resolve(t, o, w, c, filepath.Join(t.TempDir(), strconv.Itoa(i)))
				e := printConfig(t, rc)
				checkBudgets(t, w, c, rc, e)
				checkSchedulers(t, w, c, rc)
				checkCluster(t, o, w, e)
				checkLive(t, w, c, rc, e)
			}
		}
		if n == 0 {
			t.Error("no granary serve container")
		}
	})
}

// headroom is what a container's memory limit must leave above the
// node's memory budget: the Go runtime is held to the budget plus 192
// MiB, and the process needs its code, stacks and connection buffers.
func headroom(ram int64) int64 { return max(ram/8, 1<<30) }

// checkSchedulers: the container requests whole cores and Go runs as
// many schedulers (GOMAXPROCS) as it requests, not one per core of the
// host, which it shares with the training job.
func checkSchedulers(t *testing.T, w workload, c corev1.Container, rc *container) {
	t.Helper()
	cpu, ok := c.Resources.Requests[corev1.ResourceCPU]
	if !ok || cpu.MilliValue()%1000 != 0 {
		t.Errorf("%s: CPU request %s: want whole cores", w, cpu.String())
		return
	}
	if got, want := rc.env["GOMAXPROCS"], strconv.FormatInt(cpu.Value(), 10); got != want {
		t.Errorf("%s: GOMAXPROCS %q with a request of %s cores: want %s", w, got, cpu.String(), want)
	}
}

// checkBudgets: the memory budget fits the memory limit (with headroom)
// and uses at least half of it; the disk tier and the write-back limit
// fit the data volume's size and use at least half of it; the data
// directory is on that volume, not in the container's own layer.
func checkBudgets(t *testing.T, w workload, c corev1.Container, rc *container, e effective) {
	t.Helper()
	limit := c.Resources.Limits.Memory()
	ram, disk, dirty := parseSize(t, e.RAM), parseSize(t, e.Disk), parseSize(t, e.DirtyLimit)
	if limit.IsZero() {
		t.Errorf("%s: no memory limit to hold the budget to", w)
	} else if l := limit.Value(); ram+headroom(ram) > l || ram < l/2 {
		t.Errorf("%s: ram %s against a memory limit of %s: want ram + %s <= limit and ram >= limit/2",
			w, e.RAM, limit.String(), fmt.Sprint(headroom(ram)>>20, "MiB"))
	}
	vol := ""
	for _, m := range c.VolumeMounts {
		if dir := rc.mounts[m.MountPath]; dir != "" && (e.DataDir == dir || strings.HasPrefix(e.DataDir, dir+"/")) {
			vol = m.Name
		}
	}
	if vol == "" {
		t.Fatalf("%s: data-dir %s is on no volume (the cache would be lost with the container)", w, e.DataDir)
	}
	claim, ok := w.claims[vol]
	if !ok {
		if !isHostPath(w.pod, vol) {
			t.Errorf("%s: data volume %s is neither a claim template nor a hostPath", w, vol)
		}
		return // a node's directory: its size is the node's
	}
	size := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	if v := size.Value(); float64(disk+dirty) > 0.95*float64(v) || disk < v/2 {
		t.Errorf("%s: disk %s + dirty-limit %s against a volume of %s: want their sum <= 95%% of it and disk >= half",
			w, e.Disk, e.DirtyLimit, size.String())
	}
}

func isHostPath(p corev1.PodSpec, name string) bool {
	for _, v := range p.Volumes {
		if v.Name == name {
			return v.HostPath != nil
		}
	}
	return false
}

// checkCluster: a member joins the headless Service on the gossip port,
// gossips on its pod IP, and advertises an address on that Service (a
// StatefulSet pod's stable name) or its pod IP, on the S3 port.
func checkCluster(t *testing.T, o *objects, w workload, e effective) {
	t.Helper()
	if e.NodeID == "" {
		t.Fatalf("%s: not a cluster member (no node-id)", w)
	}
	if e.SecretFile == "" {
		t.Errorf("%s: no cluster-secret-file", w)
	}
	peers := o.services["granary-peers"]
	gossip := int32(0)
	for _, p := range peers.Spec.Ports {
		if p.Name == "gossip-tcp" {
			gossip = p.Port
		}
	}
	for _, j := range strings.Split(e.Join, ",") {
		if hostOf(j) != peers.Name || portOf(t, j) != gossip {
			t.Errorf("%s: join %s, want %s:%d", w, j, peers.Name, gossip)
		}
	}
	if hostOf(e.GossipBind) != fieldValues["status.podIP"] || portOf(t, e.GossipBind) != gossip {
		t.Errorf("%s: gossip-bind %s, want the pod IP on port %d", w, e.GossipBind, gossip)
	}
	host := hostOf(e.Advertise)
	_, svc, _ := strings.Cut(host, ".")
	if host != fieldValues["status.podIP"] && (w.kind != "StatefulSet" || svc != peers.Name) {
		t.Errorf("%s: advertise %s is neither POD.%s nor the pod IP", w, e.Advertise, peers.Name)
	}
	if portOf(t, e.Advertise) != portOf(t, e.Listen) {
		t.Errorf("%s: advertise %s is not on the listen port of %s", w, e.Advertise, e.Listen)
	}
}

// checkLive starts the container's node (on a free loopback port, as a
// cluster of one) and GETs every probe path and the scrape path; each
// probe's port must be the one the node listens on.
func checkLive(t *testing.T, w workload, c corev1.Container, rc *container, e effective) {
	t.Helper()
	listen := portOf(t, e.Listen)
	for name, p := range probes(c) {
		port, _ := containerPort([]corev1.Container{c}, p.Port, corev1.ProtocolTCP)
		if port != listen {
			t.Errorf("%s: %s probe on port %d, the node listens on %d", w, name, port, listen)
		}
	}
	if len(probes(c)) < 3 {
		t.Errorf("%s: want startup, liveness and readiness probes, got %d", w, len(probes(c)))
	}
	// A free loopback port, and a cluster of one (no DNS here).
	args := append(append([]string{}, rc.args...), "--listen=127.0.0.1:0", "--gossip-bind=127.0.0.1:0", "--join=")
	node := serve(t, args, rc.env)
	for name, p := range probes(c) {
		if code, body := get(t, node.url+p.Path); code != 200 {
			t.Errorf("%s: %s probe GET %s: %d %s", w, name, p.Path, code, body)
		}
	}
	if code, body := get(t, node.url+w.annotations["prometheus.io/path"]); code != 200 || !strings.Contains(body, "granary_requests_total") {
		t.Errorf("%s: scrape GET %s: %d, granary metrics missing", w, w.annotations["prometheus.io/path"], code)
	}
	node.stop(t)
}

var sizeRE = regexp.MustCompile(`^(\d+)(B|KiB|MiB|GiB|TiB)$`)

// parseSize reads a size as granary prints it ("12GiB", "1500B").
func parseSize(t *testing.T, s string) int64 {
	t.Helper()
	m := sizeRE.FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("size %q", s)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	shift := map[string]uint{"B": 0, "KiB": 10, "MiB": 20, "GiB": 30, "TiB": 40}[m[2]]
	return n << shift
}
