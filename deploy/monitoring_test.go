// Tests of deploy/monitoring: the rules pass promtool's check and its unit
// tests, every dashboard query is valid PromQL, and every metric the
// dashboard and the rules name is served by a live node (a gossip member
// in front of a real MinIO, after reads, writes, a write-back upload and
// a warm-up), with the per-bucket labels they select on.
package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"go.yaml.in/yaml/v3"

	"github.com/granary-dev/granary/internal/miniotest"
)

const (
	rulesFile     = "monitoring/granary-rules.yaml"
	rulesTestFile = "monitoring/granary-rules.test.yaml"
	dashboardFile = "monitoring/granary-dashboard.json"
)

// promtool runs promtool with args and fails the test on an error.
func promtool(t *testing.T, args ...string) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool is needed (Debian's prometheus package; make deps installs it): %v", err)
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func TestRulesPromtool(t *testing.T) {
	promtool(t, "check", "rules", rulesFile)
	promtool(t, "test", "rules", rulesTestFile)
}

// dashboard is what the tests read of the Grafana dashboard.
type dashboard struct {
	Panels []struct {
		ID    int    `json:"id"`
		Type  string `json:"type"`
		Title string `json:"title"`
		// FieldConfig holds the panel's one unit; an override may not
		// change it (TestDashboardUnits).
		FieldConfig struct {
			Defaults struct {
				Unit string `json:"unit"`
			} `json:"defaults"`
			Overrides []struct {
				Properties []struct {
					ID string `json:"id"`
				} `json:"properties"`
			} `json:"overrides"`
		} `json:"fieldConfig"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// grafanaVars stand in for the dashboard's variables in a query.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$job", ".*", "$instance", ".*", "$bucket", ".*")

// dashboardExprs returns every query of the dashboard, variables
// substituted.
func dashboardExprs(t *testing.T, d dashboard) []string {
	t.Helper()
	var exprs []string
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, grafanaVars.Replace(tg.Expr))
		}
	}
	return exprs
}

// TestDashboardQueriesParse checks every dashboard query with promtool,
// as recording rules of a throw-away rules file.
func TestDashboardQueriesParse(t *testing.T) {
	d := readDashboard(t)
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []rule
	for i, e := range dashboardExprs(t, d) {
		rules = append(rules, rule{Record: fmt.Sprintf("dashboard:query_%d", i), Expr: e})
	}
	if len(rules) < 10 {
		t.Fatalf("%d dashboard queries: the dashboard lost its panels", len(rules))
	}
	out, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard-rules.yaml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	promtool(t, "check", "rules", path)
}

// metricName matches the node's own metrics and the process collector's
// (resident memory, CPU), which a node serves too; up is Prometheus's.
var metricName = regexp.MustCompile(`\b(granary|process)_[a-z0-9_]+\b`)

// namedMetrics returns every granary and process metric the rules and
// the dashboard (queries and variables) name.
func namedMetrics(t *testing.T) []string {
	t.Helper()
	rules, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	text := string(rules)
	d := readDashboard(t)
	text += strings.Join(dashboardExprs(t, d), "\n")
	for _, v := range d.Templating.List {
		text += "\n" + v.Definition
	}
	var names []string
	for _, n := range metricName.FindAllString(text, -1) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// TestMonitoringMetricsLive: every metric named is in a live node's
// /metrics, and the per-bucket series carry the buckets' names.
func TestMonitoringMetricsLive(t *testing.T) {
	names := namedMetrics(t)
	origin := miniotest.StartT(t)
	mc := s3Client(t, origin.Endpoint, origin.AccessKey, origin.SecretKey)
	ctx := context.Background()
	for _, b := range []string{"datasets", "checkpoints"} {
		if err := mc.MakeBucket(ctx, b, minio.MakeBucketOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "granary.yaml")
	os.WriteFile(cfg, []byte("buckets:\n  checkpoints:\n    write-mode: write-back\n"), 0o600)
	env := map[string]string{
		"GRANARY_ACCESS_KEY": "monitor", "GRANARY_SECRET_KEY": "monitor-secret-key",
		"GRANARY_ORIGIN_ACCESS_KEY": origin.AccessKey, "GRANARY_ORIGIN_SECRET_KEY": origin.SecretKey,
		"GRANARY_CLUSTER_SECRET": "a-cluster-secret-of-enough-bytes",
	}
	node := serve(t, []string{"serve", "--listen=127.0.0.1:0", "--data-dir=" + filepath.Join(dir, "data"), "--config=" + cfg,
		"--origin=s3://" + origin.Endpoint + "?secure=false", "--node-id=n1", "--gossip-bind=127.0.0.1:0"}, env)
	exercise(t, node, env, mc)

	deadline := time.Now().Add(time.Minute)
	for {
		_, body := get(t, node.url+"/metrics")
		missing := missingMetrics(body, names)
		if len(missing) == 0 {
			checkBucketLabels(t, body)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics the dashboard or the rules name that the node does not serve: %v", missing)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// exercise makes node count what the dashboard shows: a miss and a hit
// of an object only the origin had, writes through and back (an upload),
// a warm-up.
func exercise(t *testing.T, node *served, env map[string]string, origin *minio.Client) {
	t.Helper()
	ctx := context.Background()
	c := s3Client(t, strings.TrimPrefix(node.url, "http://"), env["GRANARY_ACCESS_KEY"], env["GRANARY_SECRET_KEY"])
	data := bytes.Repeat([]byte("metrics "), 4096)
	for _, b := range []string{"datasets", "checkpoints"} {
		if _, err := c.PutObject(ctx, b, "obj", bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
			t.Fatalf("put %s: %v", b, err)
		}
	}
	if _, err := origin.PutObject(ctx, "datasets", "cold", bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		obj, err := c.GetObject(ctx, "datasets", "cold", minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(obj)
		obj.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("get: %v", err)
		}
	}
	warm := exec.Command(granaryBin, "warm", "--endpoint", node.url, "s3://datasets/")
	warm.Env = environ(env)
	if out, err := warm.CombinedOutput(); err != nil {
		t.Fatalf("granary warm: %v\n%s", err, out)
	}
}

// missingMetrics returns the names without a sample in the exposition.
func missingMetrics(body string, names []string) []string {
	var missing []string
	for _, n := range names {
		if !regexp.MustCompile(`(?m)^` + n + `[{ ]`).MatchString(body) {
			missing = append(missing, n)
		}
	}
	return missing
}

// checkBucketLabels: the per-bucket counters have series of the bucket
// read and written.
func checkBucketLabels(t *testing.T, body string) {
	t.Helper()
	for _, series := range []string{
		`granary_cache_misses_total{bucket="datasets"}`,
		`granary_cache_hits_total{bucket="datasets",tier="ram"}`,
		`granary_cache_hit_bytes_total{bucket="datasets",tier="ram"}`,
		`granary_origin_read_bytes_total{bucket="datasets"}`,
	} {
		if !strings.Contains(body, "\n"+series+" ") {
			t.Errorf("no series %s in /metrics", series)
		}
	}
}
