// A three-node cluster of real `granary serve` processes on loopback in
// front of MinIO, for the cluster tests: reserved ports (static peers must
// know each other's address before they start), shared credentials and
// secret, and the nodes' origin request counters.
package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/granary-dev/granary/internal/miniotest"
)

// testClusterSecret is the cluster secret of the test clusters.
const testClusterSecret = "test-cluster-secret-0123456789"

// clusterRig is a running cluster.
type clusterRig struct {
	mio   *miniotest.Server
	env   map[string]string // shared by every node
	ids   []string
	addrs []string
	nodes []*child
	args  []string // extra flags of every node
}

// listenLoopback binds n loopback listeners (a child started on one
// serves on it).
func listenLoopback(t *testing.T, n int) []*net.TCPListener {
	t.Helper()
	var out []*net.TCPListener
	for range n {
		ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		out = append(out, ln)
	}
	return out
}

// startCluster starts n static-peer nodes in front of origin (an
// s3://host:port?secure=false URL of mio, or of a proxy in front of it).
func startCluster(t *testing.T, mio *miniotest.Server, origin string, n int, args ...string) *clusterRig {
	t.Helper()
	return startClusterWith(t, mio, origin, n, nil, args...)
}

// startClusterWith is startCluster with env added to the nodes'.
func startClusterWith(t *testing.T, mio *miniotest.Server, origin string, n int, env map[string]string, args ...string) *clusterRig {
	t.Helper()
	return startClusterVia(t, mio, origin, n, env, nil, args...)
}

// startClusterVia is startClusterWith with the members reaching node i
// at via(its address) (a proxy in front of it); nil via: directly.
func startClusterVia(t *testing.T, mio *miniotest.Server, origin string, n int, env map[string]string, via func(addr string) string, args ...string) *clusterRig {
	t.Helper()
	if via == nil {
		via = func(addr string) string { return addr }
	}
	lns := listenLoopback(t, n)
	r := &clusterRig{mio: mio, args: append([]string{"--origin", origin}, args...),
		env: map[string]string{
			"GRANARY_ACCESS_KEY": "cluster-access", "GRANARY_SECRET_KEY": "cluster-secret-key",
			"GRANARY_ORIGIN_ACCESS_KEY": mio.AccessKey, "GRANARY_ORIGIN_SECRET_KEY": mio.SecretKey,
			"GRANARY_CLUSTER_SECRET": testClusterSecret, "GRANARY_LOG_LEVEL": "warn",
		}}
	for k, v := range env {
		r.env[k] = v
	}
	var peers []string
	for i, ln := range lns {
		r.ids = append(r.ids, "n"+strconv.Itoa(i+1))
		r.addrs = append(r.addrs, ln.Addr().String())
		peers = append(peers, r.ids[i]+"="+via(r.addrs[i]))
	}
	for i, ln := range lns {
		r.nodes = append(r.nodes, r.start(t, i, ln, strings.Join(peers, ",")))
	}
	// Nodes still running stop cleanly at the end: a node that exits
	// otherwise (a data race in these -race children exits 66) fails the
	// test.
	t.Cleanup(func() {
		for _, c := range r.nodes {
			if c != nil {
				c.stop(t)
			}
		}
	})
	return r
}

// start runs node i (its own data directory) on ln with the static peer
// list.
func (r *clusterRig) start(t *testing.T, i int, ln *net.TCPListener, peers string) *child {
	env := map[string]string{"GRANARY_DATA_DIR": t.TempDir()}
	for k, v := range r.env {
		env[k] = v
	}
	args := append([]string{"--node-id", r.ids[i], "--peers", peers}, r.args...)
	return startChildOn(t, ln, env, args...)
}

// metric sums the values of the samples of name whose labels contain
// every string in labels, on node addr.
func metric(t *testing.T, addr, name string, labels ...string) float64 {
	t.Helper()
	return metricOver(t, http.DefaultTransport, "http://"+addr, name, labels...)
}

// metricOver is metric of the node at base (scheme://host:port) over rt.
func metricOver(t *testing.T, rt http.RoundTripper, base, name string, labels ...string) float64 {
	t.Helper()
	resp, err := (&http.Client{Transport: rt, Timeout: time.Minute}).Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(line, l)
		}
		if i := strings.LastIndexByte(line, ' '); ok && i > 0 {
			v, err := strconv.ParseFloat(line[i+1:], 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", line, err)
			}
			sum += v
		}
	}
	return sum
}

// originGets is the origin GET requests of every node still running.
func (r *clusterRig) originGets(t *testing.T) int {
	total := 0.0
	for i, c := range r.nodes {
		if c != nil {
			total += metric(t, r.addrs[i], "granary_origin_requests_total", `op="get"`)
		}
	}
	return int(total)
}

func objectName(i int) string { return fmt.Sprintf("set/obj-%03d", i) }
