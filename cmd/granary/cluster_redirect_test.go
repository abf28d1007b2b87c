// Owner routing on a real cluster: a GET that asks for it is redirected
// to the member owning the chunk it starts in, boto3 with
// clients/python/granary_route.py reads through one member without that
// member relaying a chunk, and so does `granary bench train --by-owners`.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/signer"

	"github.com/granary-dev/granary/bench"
	"github.com/granary-dev/granary/cluster"
	"github.com/granary-dev/granary/internal/miniotest"
)

// Owner routing's headers (api/object_redirect.go).
const (
	routeHeader = "X-Granary-Route"
	ownerHeader = "X-Granary-Owner"
)

// routeRig is a cluster, its ring, and a client of it that does not
// follow redirects.
type routeRig struct {
	*clusterRig
	ring *cluster.Ring
	cl   *http.Client
}

// newRouteRig is the routeRig of r, its client over rt (nil: plain HTTP).
func newRouteRig(t *testing.T, r *clusterRig, rt http.RoundTripper) routeRig {
	t.Helper()
	ring, err := cluster.NewRing(r.ids)
	if err != nil {
		t.Fatal(err)
	}
	cl := &http.Client{Transport: rt, Timeout: time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	return routeRig{r, ring, cl}
}

// get sends a GET of bucket/key to base (scheme://host:port), signed,
// with extra headers; the answer is not followed.
func (r routeRig) get(t *testing.T, base, bucket, key string, hdr map[string]string) *http.Response {
	t.Helper()
	return r.getURL(t, base+(&url.URL{Path: "/" + bucket + "/" + key}).EscapedPath(), hdr)
}

// getURL is get of a URL as it is (a redirect's Location).
func (r routeRig) getURL(t *testing.T, u string, hdr map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	req = signer.SignV4(*req, r.env["GRANARY_ACCESS_KEY"], r.env["GRANARY_SECRET_KEY"], "", "us-east-1")
	resp, err := r.cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// owner is the member the ring places chunk idx of bucket/key on.
func (r routeRig) owner(bucket, key string, idx int64) string {
	return r.ring.Owners(cluster.ChunkKey(bucket, key, idx), 1)[0]
}

// addrOf is member id's address.
func (r routeRig) addrOf(t *testing.T, id string) string {
	for i, x := range r.ids {
		if x == id {
			return r.addrs[i]
		}
	}
	t.Fatalf("no member %q", id)
	return ""
}

// body reads resp's body whole, failing on status other than want.
func body(t *testing.T, resp *http.Response, want int) []byte {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != want {
		t.Fatalf("%s: status %d, want %d: %s", resp.Request.URL, resp.StatusCode, want, b)
	}
	return b
}

func TestClusterRedirectsToOwners(t *testing.T) {
	mio := miniotest.StartT(t)
	cr := startCluster(t, mio, "s3://"+mio.Endpoint+"?secure=false", 3, "--ram", "64MiB", "--disk", "0", "--chunk-size", "1MiB")
	r := newRouteRig(t, cr, nil)
	origin, err := newS3Client("http://"+mio.Endpoint, envMap(minioEnv(mio)))
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int{"big.bin": 5<<20 + 123}
	for i := range 12 {
		// Names a Location must escape: a space, '+', '?', '#', '%', UTF-8.
		sizes[fmt.Sprintf("go/%02d odd+?#%%ü", i)] = 100<<10 + i
		sizes[fmt.Sprintf("boto/%02d odd+?#%%ü", i)] = 100<<10 + i
	}
	sums := seed(t, origin, "data", "", sizes)
	n1 := "http://" + r.addrs[0]
	ask := map[string]string{routeHeader: "owner"}

	// Asked: redirected to the owner unless n1 is the owner; the owner
	// serves the request sent on, signed for it, whatever it is asked.
	redirected, served := 0, 0
	for i := range 12 {
		key := fmt.Sprintf("go/%02d odd+?#%%ü", i)
		resp := r.get(t, n1, "data", key, ask)
		own := r.owner("data", key, 0)
		if own == r.ids[0] {
			served++
			if b := body(t, resp, http.StatusOK); sha256.Sum256(b) != sums[key] {
				t.Fatalf("%s served by its owner: wrong bytes", key)
			}
			continue
		}
		redirected++
		body(t, resp, http.StatusTemporaryRedirect)
		loc, err := url.Parse(resp.Header.Get("Location"))
		if err != nil || loc.Host != r.addrOf(t, own) || loc.Path != "/data/"+key || resp.Header.Get(ownerHeader) != own {
			t.Fatalf("%s: Location %q, %s %q; want %s at %s", key, resp.Header.Get("Location"), ownerHeader,
				resp.Header.Get(ownerHeader), own, r.addrOf(t, own))
		}
		again := r.getURL(t, resp.Header.Get("Location"), ask)
		if b := body(t, again, http.StatusOK); sha256.Sum256(b) != sums[key] {
			t.Fatalf("%s at its owner: wrong bytes", key)
		}
	}
	if redirected == 0 || served == 0 {
		t.Fatalf("%d redirected, %d served by n1: the ring gave n1 all or none of 12 keys", redirected, served)
	}

	// A range is routed by the chunk it starts in; a suffix range, and a
	// GET that does not ask, are served here.
	for idx := int64(0); idx < 6; idx++ {
		rng := fmt.Sprintf("bytes=%d-%d", idx<<20+7, idx<<20+99)
		resp := r.get(t, n1, "data", "big.bin", map[string]string{routeHeader: "owner", "Range": rng})
		if own := r.owner("data", "big.bin", idx); own != r.ids[0] {
			body(t, resp, http.StatusTemporaryRedirect)
			if resp.Header.Get(ownerHeader) != own {
				t.Fatalf("%s: redirected to %q, want %s", rng, resp.Header.Get(ownerHeader), own)
			}
		} else if b := body(t, resp, http.StatusPartialContent); len(b) != 93 {
			t.Fatalf("%s at n1: %d bytes", rng, len(b))
		}
	}
	suffix := r.get(t, n1, "data", "big.bin", map[string]string{routeHeader: "owner", "Range": "bytes=-10"})
	body(t, suffix, http.StatusPartialContent)
	// A member that holds a copy in memory serves it rather than redirect
	// (once the relayed read's copy is stored: after its answer).
	for i := range 12 {
		key := fmt.Sprintf("go/%02d odd+?#%%ü", i)
		if r.owner("data", key, 0) == r.ids[0] {
			continue
		}
		if b := body(t, r.get(t, n1, "data", key, nil), http.StatusOK); sha256.Sum256(b) != sums[key] {
			t.Fatalf("%s via n1, not asked: wrong bytes", key)
		}
		waitFor(t, 30*time.Second, key+" served from n1's hot copy, not redirected", func() bool {
			resp := r.get(t, n1, "data", key, ask)
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body)
			return resp.StatusCode == http.StatusOK
		})
		break
	}

	// The ring call's partitions place chunks as the nodes' ring does.
	checkRingAnswer(t, r, n1)

	// boto3 with the helper, through n1, with each Python, placing by the
	// ring and by redirect alone: every object whole, and n1 relays no
	// chunk of them. By the ring the helper sends each GET to its owner (n1
	// redirects none); by redirect n1 redirects those it does not own.
	redirects := func() (n float64) {
		for _, a := range r.addrs {
			n += metric(t, a, "granary_requests_total", `code="307"`)
		}
		return n
	}
	for _, py := range pythons(t) {
		for _, mode := range []string{"ring", "redirect"} {
			hops := metric(t, r.addrs[0], "granary_peer_chunk_reads_total")
			moved := redirects()
			hash := botoRoutedReads(t, py, mode, n1, r.env, "boto/", sums)
			t.Logf("%s: the helper placed by %s (XXH64: %s)", py, mode, hash)
			if d := metric(t, r.addrs[0], "granary_peer_chunk_reads_total") - hops; d != 0 {
				t.Errorf("%s by %s: n1 read %v chunks from its peers while boto3 read through it with owner routing", py, mode, d)
			}
			d := redirects() - moved
			switch {
			case mode == "ring" && d != 0:
				t.Errorf("%s: placing by the ring, boto3 was still redirected %v times: a GET reached a non-owner", py, d)
			case mode == "redirect" && d == 0:
				t.Errorf("%s: no member redirected boto3's GETs: the helper did not ask", py)
			}
		}
	}

	// An owner stopped: whether n1 still redirects to it (its probes
	// have not noticed yet) or not, boto3 with the helper reads every
	// byte through n1 (a redirect to a dead owner goes back to n1).
	r.nodes[2].stop(t)
	r.nodes[2] = nil
	for _, py := range pythons(t) {
		botoRoutedReads(t, py, "ring", n1, r.env, "boto/", sums)
	}
}

// checkRingAnswer fetches GET /_granary/ring from base and checks that its
// partitions give every chunk of a few keys the owner the ring gives it.
func checkRingAnswer(t *testing.T, r routeRig, base string) {
	t.Helper()
	var ans struct {
		Members    []struct{ ID string }
		Partitions []int
	}
	if err := json.Unmarshal(body(t, r.get(t, base, "_granary", "ring", nil), http.StatusOK), &ans); err != nil {
		t.Fatal(err)
	}
	if len(ans.Members) != 3 || len(ans.Partitions) == 0 {
		t.Fatalf("ring answer: %d members, %d partitions", len(ans.Members), len(ans.Partitions))
	}
	for i := range 300 {
		key := cluster.ChunkKey("data", fmt.Sprintf("k%d", i), int64(i%4))
		p := xxhash.Sum64(key) % uint64(len(ans.Partitions))
		if got, want := ans.Members[ans.Partitions[p]].ID, r.ring.Owners(key, 1)[0]; got != want {
			t.Fatalf("%q: the ring answer places it on %s, the ring on %s", key, got, want)
		}
	}
}

// pythons are the distinct Python interpreters with boto3 (Debian's,
// and the one first on PATH): the helper must work with each botocore.
func pythons(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, name := range []string{"/usr/bin/python3", "python3"} {
		p, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		if real, err := filepath.EvalSymlinks(p); err == nil && !slices.Contains(out, real) &&
			exec.Command(real, "-c", "import boto3").Run() == nil {
			out = append(out, real)
		}
	}
	if len(out) == 0 {
		t.Fatal("no python3 with boto3 (make deps installs Debian's)")
	}
	return out
}

// botoRoutedReads reads every object of sums under prefix with boto3
// (Python py) through endpoint, owner routing on
// (clients/python/granary_route.py) and placing by mode ("ring" or
// "redirect" alone), comparing bytes. It returns whose XXH64 the helper
// used: "module" (xxhash's) or "own".
func botoRoutedReads(t *testing.T, py, mode, endpoint string, env map[string]string, prefix string, sums map[string][32]byte) string {
	t.Helper()
	helper, err := filepath.Abs("../../clients/python")
	if err != nil {
		t.Fatal(err)
	}
	const script = `
import hashlib, sys, boto3
import granary_route
from granary_route import route_to_owners
print("hash", "own" if granary_route.xxh64 is granary_route._xxh64 else "module")
granary_route.PLACE_BY_RING = sys.argv[1] == "ring"
s3 = route_to_owners(boto3.client("s3", endpoint_url=sys.argv[2], region_name="us-east-1",
                     aws_access_key_id=sys.argv[3], aws_secret_access_key=sys.argv[4]))
for key in sys.argv[5:]:
    body = s3.get_object(Bucket="data", Key=key)["Body"].read()
    print(hashlib.sha256(body).hexdigest(), key)
`
	var keys []string
	for k := range sums {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"-c", script, mode, endpoint, env["GRANARY_ACCESS_KEY"], env["GRANARY_SECRET_KEY"]}, keys...)
	cmd := exec.CommandContext(ctx, py, args...)
	cmd.Env = append(os.Environ(), "AWS_EC2_METADATA_DISABLED=true", "PYTHONPATH="+helper)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("boto3: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	hash, _ := strings.CutPrefix(lines[0], "hash ")
	if lines = lines[1:]; len(lines) != len(keys) {
		t.Fatalf("%s: boto3 read %d objects, want %d:\n%s", py, len(lines), len(keys), out)
	}
	for _, l := range lines {
		sum, k, _ := strings.Cut(l, " ")
		if want := fmt.Sprintf("%x", sums[k]); sum != want {
			t.Fatalf("%s: boto3 %s: sha256 %s, want %s", py, k, sum, want)
		}
	}
	return hash
}

// TestBenchTrainByOwners: `granary bench train --by-owners` pointed at one
// member reads every sample from the member owning it: that member reads
// no chunk from its peers, and each other member answers GETs itself.
// Pointed at an endpoint that is no cluster member, it says so.
func TestBenchTrainByOwners(t *testing.T) {
	mio := miniotest.StartT(t)
	r := startCluster(t, mio, "s3://"+mio.Endpoint+"?secure=false", 3, "--ram", "64MiB", "--disk", "0")
	env := map[string]string{"GRANARY_ACCESS_KEY": r.env["GRANARY_ACCESS_KEY"], "GRANARY_SECRET_KEY": r.env["GRANARY_SECRET_KEY"]}
	origin, err := newS3Client("http://"+mio.Endpoint, envMap(minioEnv(mio)))
	if err != nil {
		t.Fatal(err)
	}
	if err := origin.MakeBucket(context.Background(), "bench", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	ep := []string{"--endpoint", "http://" + r.addrs[0], "--json"}
	code, out, errb := run(t, env, append([]string{"bench", "gen", "--workload", "resnet50", "--files", "24",
		"--samples-per-file", "4", "--sample-size", "4KiB"}, append(ep, "s3://bench/r50/")...)...)
	if code != 0 {
		t.Fatalf("gen: exit %d\n%s%s", code, out, errb)
	}
	hops := metric(t, r.addrs[0], "granary_peer_chunk_reads_total")
	code, out, errb = run(t, env, append([]string{"bench", "train", "--by-owners", "--batch-size", "4", "--compute", "1ms",
		"--epochs", "2"}, append(ep, "s3://bench/r50/")...)...)
	var rep bench.Repeated
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Runs) != 1 || rep.Runs[0].Samples != 2*96 {
		t.Fatalf("train --by-owners: exit %d\n%s%s", code, out, errb)
	}
	if d := metric(t, r.addrs[0], "granary_peer_chunk_reads_total") - hops; d != 0 {
		t.Errorf("the member pointed at read %v chunks from its peers: reads did not go to their owners", d)
	}
	for i := 1; i < 3; i++ {
		if gets := metric(t, r.addrs[i], "granary_requests_total", `op="GetObject"`); gets == 0 {
			t.Errorf("member %s answered no GET of the benchmark", r.ids[i])
		}
	}
	mioEnv := map[string]string{"AWS_ACCESS_KEY_ID": mio.AccessKey, "AWS_SECRET_ACCESS_KEY": mio.SecretKey}
	code, _, errb = run(t, mioEnv, "bench", "train", "--by-owners", "--endpoint", mio.URL(), "s3://bench/r50/")
	if code == 0 || !strings.Contains(errb, "ring") {
		t.Errorf("--by-owners against MinIO: exit %d\n%s", code, errb)
	}
}
