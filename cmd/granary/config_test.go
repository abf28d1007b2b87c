// Tests of configuration loading: defaults, the YAML file, the
// environment and flags, their precedence, and validation.
package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/granary-dev/granary/access"
	"github.com/granary-dev/granary/gateway"
)

// envMap is a Getenv over a fixed map.
func envMap(m map[string]string) Getenv {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// loadWith parses args as `serve` flags and loads the configuration.
func loadWith(t *testing.T, args []string, env map[string]string) (Config, error) {
	t.Helper()
	cmd := newServeCmd(envMap(env))
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return LoadConfig(cmd.Flags(), envMap(env))
}

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaults(t *testing.T) {
	t.Chdir(t.TempDir())
	c, err := loadWith(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	dataDir := filepath.Join(wd, "granary-data")
	want := Config{
		Listen: "127.0.0.1:9000", DataDir: dataDir, RAM: 1 << 30, Disk: 10 << 30,
		Origin: "file://" + filepath.Join(dataDir, "origin"), ChunkSize: 8 << 20,
		Freshness: "ttl", TTL: Duration(time.Minute), Region: "us-east-1",
		Domains: StringList{"localhost"}, LogLevel: "info", WriteMode: "write-through", Eviction: "tinylfu",
		Cluster:       ClusterConfig{Owners: 1, PeerTimeout: Duration(3 * time.Second)},
		MaxConnsPerIP: 1024, MetricsAuth: "open",
		OriginTimeout: Duration(5 * time.Second), ServeStaleWhenDown: true, OriginIdleProbe: Duration(5 * time.Second),
		GetLane: true,
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("defaults:\n got %+v\nwant %+v", c, want)
	}
	f, buckets, err := c.Freshnesses()
	if err != nil || f != (gateway.Freshness{Mode: gateway.TTL, TTL: time.Minute}) || len(buckets) != 0 {
		t.Fatalf("freshness %+v %v %v", f, buckets, err)
	}
}

// TestPrecedence sets each value in some of the sources and checks that
// the strongest one present wins: flags > environment > file > defaults.
func TestPrecedence(t *testing.T) {
	type source struct{ file, env, flag string }
	cases := []struct {
		key string
		src source
		get func(Config) string
		def string
	}{
		{"listen", source{"127.0.0.1:1001", "127.0.0.1:1002", "127.0.0.1:1003"}, func(c Config) string { return c.Listen }, "127.0.0.1:9000"},
		{"ram", source{"2GiB", "3GiB", "4GiB"}, func(c Config) string { return c.RAM.String() }, "1GiB"},
		{"disk", source{"0", "20GiB", "30GiB"}, func(c Config) string { return c.Disk.String() }, "10GiB"},
		{"chunk-size", source{"1MiB", "2MiB", "4MiB"}, func(c Config) string { return c.ChunkSize.String() }, "8MiB"},
		{"ttl", source{"10s", "20s", "30s"}, func(c Config) string { return c.TTL.String() }, "1m0s"},
		{"freshness", source{"immutable", "always", "ttl"}, func(c Config) string { return c.Freshness }, "ttl"},
		{"region", source{"eu-west-1", "eu-west-2", "eu-west-3"}, func(c Config) string { return c.Region }, "us-east-1"},
		{"log-level", source{"debug", "warn", "error"}, func(c Config) string { return c.LogLevel }, "info"},
		{"write-mode", source{"read-only", "write-back", "write-through"}, func(c Config) string { return c.WriteMode }, "write-through"},
		{"dirty-limit", source{"1GiB", "2GiB", "3GiB"}, func(c Config) string { return c.DirtyLimit.String() }, "0B"},
		{"domain", source{"a.example", "b.example,c.example", "d.example"}, func(c Config) string { return strings.Join(c.Domains, ",") }, "localhost"},
	}
	for _, tc := range cases {
		for mask := 0; mask < 8; mask++ {
			dir := t.TempDir()
			env := map[string]string{"GRANARY_DATA_DIR": dir}
			var args []string
			want := tc.def
			if mask&1 != 0 {
				env["GRANARY_CONFIG"] = writeFile(t, dir, "c.yaml", tc.key+": "+tc.src.file+"\n")
				want = tc.src.file
			}
			if mask&2 != 0 {
				env[setting{name: tc.key}.env()] = tc.src.env
				want = tc.src.env
			}
			if mask&4 != 0 {
				args = []string{"--" + tc.key, tc.src.flag}
				want = tc.src.flag
			}
			c, err := loadWith(t, args, env)
			if err != nil {
				t.Fatalf("%s mask %d: %v", tc.key, mask, err)
			}
			if got := tc.get(c); got != normalizeWant(tc.key, want) {
				t.Errorf("%s mask %03b: got %q, want %q", tc.key, mask, got, want)
			}
		}
	}
}

// normalizeWant renders a source value the way Config reports it.
func normalizeWant(key, v string) string {
	switch key {
	case "ram", "disk", "chunk-size":
		n, _ := ParseSize(v)
		return n.String()
	case "ttl":
		d, _ := ParseDuration(v)
		return d.String()
	}
	return v
}

func TestConfigFlagBeatsEnvConfig(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a.yaml", "listen: 127.0.0.1:1111\n")
	b := writeFile(t, dir, "b.yaml", "listen: 127.0.0.1:2222\n")
	c, err := loadWith(t, []string{"--config", b}, map[string]string{"GRANARY_CONFIG": a, "GRANARY_DATA_DIR": dir})
	if err != nil || c.Listen != "127.0.0.1:2222" {
		t.Fatalf("got %q, %v", c.Listen, err)
	}
}

func TestRepeatedDomainFlag(t *testing.T) {
	c, err := loadWith(t, []string{"--domain", "S3.Example.com", "--domain", "files.local", "--data-dir", t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (StringList{"s3.example.com", "files.local"}); !reflect.DeepEqual(c.Domains, want) {
		t.Fatalf("domains %v, want %v", c.Domains, want)
	}
}

func TestYAMLFile(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "granary.yaml", `
listen: 0.0.0.0:9100
data-dir: `+dir+`
ram: 4GiB
disk: 107374182400
origin: s3://minio.internal:9000?secure=false
chunk-size: 16MiB
freshness: ttl
ttl: 5m
domain: [s3.local, storage.local]
buckets:
  datasets: {freshness: immutable, anonymous-read: true}
  checkpoints: {freshness: always, write-mode: write-back}
  logs: {ttl: 10s, write-mode: read-only}
  other: {}
`)
	c, err := loadWith(t, []string{"--config", path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.RAM != 4<<30 || c.Disk != 100<<30 || c.ChunkSize != 16<<20 || c.Listen != "0.0.0.0:9100" ||
		c.Origin != "s3://minio.internal:9000?secure=false" || !reflect.DeepEqual(c.Domains, StringList{"s3.local", "storage.local"}) {
		t.Fatalf("config %+v", c)
	}
	def, buckets, err := c.Freshnesses()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]gateway.Freshness{
		"datasets":    {Mode: gateway.Immutable, TTL: 5 * time.Minute},
		"checkpoints": {Mode: gateway.Always, TTL: 5 * time.Minute},
		"logs":        {Mode: gateway.TTL, TTL: 10 * time.Second},
		"other":       {Mode: gateway.TTL, TTL: 5 * time.Minute},
	}
	if def != (gateway.Freshness{Mode: gateway.TTL, TTL: 5 * time.Minute}) || !reflect.DeepEqual(buckets, want) {
		t.Fatalf("freshness %+v %+v", def, buckets)
	}
	mode, modes, err := c.WriteModes()
	wantModes := map[string]gateway.WriteMode{"checkpoints": gateway.WriteBack, "logs": gateway.ReadOnly}
	if err != nil || mode != gateway.WriteThrough || !reflect.DeepEqual(modes, wantModes) {
		t.Fatalf("write modes %v %v %v", mode, modes, err)
	}
	if c.DirtyBytes() != 25<<30 {
		t.Fatalf("dirty limit %d, want a quarter of the disk", c.DirtyBytes())
	}
	if p := c.AnonymousPolicy(); !p.Object(access.Read, "datasets", "x") || p.Object(access.Read, "logs", "x") || p.Object(access.List, "datasets", "") {
		t.Fatalf("anonymous policy %+v, want reads of datasets only", p.Grants())
	}
}

func TestYAMLSingleDomainAndEmptyFile(t *testing.T) {
	dir := t.TempDir()
	c, err := loadWith(t, []string{"--config", writeFile(t, dir, "a.yaml", "domain: s3.local\n"), "--data-dir", dir}, nil)
	if err != nil || !reflect.DeepEqual(c.Domains, StringList{"s3.local"}) {
		t.Fatalf("domains %v, %v", c.Domains, err)
	}
	c, err = loadWith(t, []string{"--config", writeFile(t, dir, "cl.yaml", "cluster-secret-file: /run/secrets/cluster\nreplicas: 2\n")}, nil)
	if err != nil || c.Cluster.SecretFile != "/run/secrets/cluster" || c.Cluster.Owners != 2 {
		t.Fatalf("cluster settings from the file: %+v, %v", c.Cluster, err)
	}
	c, err = loadWith(t, []string{"--config", writeFile(t, dir, "empty.yaml", "# nothing\n"), "--data-dir", dir}, nil)
	if err != nil || c.Listen != "127.0.0.1:9000" {
		t.Fatalf("empty file: %+v, %v", c, err)
	}
}

func TestSecretsRefusedInYAML(t *testing.T) {
	docs := map[string]string{
		"secret-key: hunter2\n":                     "secret-key",
		"access_key: AKIA\n":                        "access_key",
		"origin-secret-key: hunter2\n":              "origin-secret-key",
		"buckets:\n  b:\n    password: hunter2\n":   "buckets.b.password",
		"origin:\n  credentials: hunter2\n":         "origin.credentials",
		"listen: 127.0.0.1:1\nAccessKey: hunter2\n": "AccessKey",
		"cluster:\n  - {auth-token: hunter2}\n":     "cluster.auth-token",
		"GRANARY_SECRET_KEY: hunter2\nram: 1GiB\n":  "GRANARY_SECRET_KEY",
		"origin-secret-key-file: /run/secret/key\n": "origin-secret-key-file",
	}
	for doc, key := range docs {
		dir := t.TempDir()
		_, err := loadWith(t, []string{"--config", writeFile(t, dir, "c.yaml", doc)}, nil)
		if err == nil {
			t.Errorf("%q: accepted", doc)
			continue
		}
		if !strings.Contains(err.Error(), `"`+key+`"`) || !strings.Contains(err.Error(), "environment") {
			t.Errorf("%q: error %q does not name key %q and where secrets go", doc, err, key)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: error %q repeats the secret", doc, err)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		args []string
		env  map[string]string
		file string
		want string
	}{
		{args: []string{"--ram", "lots"}, want: "flag --ram: invalid size"},
		{env: map[string]string{"GRANARY_DISK": "-1"}, want: "GRANARY_DISK: invalid size"},
		{args: []string{"--ram", "0", "--disk", "0"}, want: "at least one cache tier"},
		{args: []string{"--ram", "1MiB"}, want: "smaller than one chunk"},
		{args: []string{"--disk", "1KiB"}, want: "smaller than one chunk"},
		{args: []string{"--chunk-size", "1KiB"}, want: "chunk-size"},
		{args: []string{"--chunk-size", "2GiB", "--ram", "8GiB"}, want: "chunk-size"},
		{args: []string{"--origin", "ftp://host/x"}, want: "unknown scheme"},
		{args: []string{"--origin", "file://relative/dir"}, want: "names host"},
		{args: []string{"--freshness", "sometimes"}, want: "unknown mode"},
		{args: []string{"--ttl", "0s"}, want: "ttl: must be positive"},
		{args: []string{"--ttl", "5"}, want: "invalid duration"},
		{args: []string{"--listen", "9000"}, want: "listen"},
		{args: []string{"--listen", "127.0.0.1:99999"}, want: "bad port"},
		{args: []string{"--log-level", "chatty"}, want: "log-level"},
		{args: []string{"--domain", "http://x.local"}, want: "bare host name"},
		{file: "ram: 1GiB\nbogus: 1\n", want: "bogus"},
		{file: "ttl: 60\n", want: "invalid duration"},
		{file: "buckets:\n  b: {freshness: weekly}\n", want: "buckets.b.freshness"},
		{args: []string{"--write-mode", "write-around"}, want: "write-mode"},
		{file: "buckets:\n  b: {write-mode: lazy}\n", want: "buckets.b.write-mode"},
		{file: "listen: [1\n", want: "config"},
		{args: []string{"--peers", "a=127.0.0.1:1"}, want: "node-id: required"},
		{args: []string{"--node-id", "a", "--peers", "b=127.0.0.1:1"}, want: "not in the list"},
		{args: []string{"--node-id", "a", "--peers", "a=127.0.0.1:1,a=127.0.0.1:2"}, want: "peers"},
		{args: []string{"--node-id", "a", "--peers", "a=nowhere"}, want: "peers: a"},
		{args: []string{"--node-id", "a", "--peers", "a=127.0.0.1:1", "--join", "127.0.0.1:2"}, want: "give one"},
		{args: []string{"--owners", "0"}, want: "owners"},
		{args: []string{"--replicas", "0"}, want: "owners"},
		{args: []string{"--peer-timeout", "0s"}, want: "peer-timeout"},
		{args: []string{"--max-conns-per-ip", "-1"}, want: "max-conns-per-ip"},
		{args: []string{"--metrics-auth", "basic:x"}, want: "metrics-auth"},
		{file: "metrics-auth: \"bearer:\"\n", want: "metrics-auth"},
		{env: map[string]string{"GRANARY_MAX_CONNS_PER_IP": "many"}, want: "GRANARY_MAX_CONNS_PER_IP"},
		{args: []string{"--node-id", "a", "--listen", "0.0.0.0:9000"}, want: "advertise"},
		{args: []string{"--peer-mtls"}, want: "peer-mtls: needs tls-cert"},
		{args: []string{"--peer-mtls", "--tls-cert", "c.pem", "--tls-key", "k.pem"}, want: "and peer-ca-file"},
		{env: map[string]string{"GRANARY_PEER_MTLS": "maybe"}, want: `GRANARY_PEER_MTLS: "maybe" is not true or false`},
		{file: "peer-mtls: sometimes\n", want: "config"},
	}
	for _, tc := range cases {
		dir := t.TempDir()
		env := map[string]string{"GRANARY_DATA_DIR": dir}
		for k, v := range tc.env {
			env[k] = v
		}
		if tc.file != "" {
			env["GRANARY_CONFIG"] = writeFile(t, dir, "c.yaml", tc.file)
		}
		_, err := loadWith(t, tc.args, env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("args %v env %v file %q: error %v, want one containing %q", tc.args, tc.env, tc.file, err, tc.want)
		}
	}
}

// TestPeerMTLSSources: peer-mtls, a flag without a value, from each
// source in order of precedence.
func TestPeerMTLSSources(t *testing.T) {
	needs := []string{"--tls-cert", "c.pem", "--tls-key", "k.pem", "--peer-ca-file", "ca.pem"}
	for _, tc := range []struct {
		file, env string
		flags     []string
		want      bool
	}{
		{want: false},
		{file: "peer-mtls: true\n", want: true},
		{file: "peer-mtls: true\n", env: "false", want: false},
		{env: "true", want: true},
		{env: "true", flags: []string{"--peer-mtls=false"}, want: false},
		{flags: []string{"--peer-mtls"}, want: true},
	} {
		dir := t.TempDir()
		env := map[string]string{"GRANARY_DATA_DIR": dir, "GRANARY_PEER_MTLS": tc.env}
		if tc.file != "" {
			env["GRANARY_CONFIG"] = writeFile(t, dir, "c.yaml", tc.file)
		}
		c, err := loadWith(t, append(append([]string{}, needs...), tc.flags...), env)
		if err != nil || c.PeerMTLS != tc.want {
			t.Errorf("file %q env %q flags %q: peer-mtls %v, %v; want %v", tc.file, tc.env, tc.flags, c.PeerMTLS, err, tc.want)
		}
	}
}

// TestClusterSecretRules: a member needs a secret of some length, from
// one place.
func TestClusterSecretRules(t *testing.T) {
	c := ClusterConfig{NodeID: "a"}
	if _, err := clusterSecret(c, envMap(nil)); err == nil || !strings.Contains(err.Error(), "at least") {
		t.Errorf("no secret: %v", err)
	}
	if _, err := clusterSecret(c, envMap(map[string]string{"GRANARY_CLUSTER_SECRET": "short"})); err == nil {
		t.Error("a 5-byte secret was accepted")
	}
	file := writeFile(t, t.TempDir(), "secret", "a-secret-long-enough-for-this\n")
	got, err := clusterSecret(ClusterConfig{NodeID: "a", SecretFile: file}, envMap(nil))
	if err != nil || string(got) != "a-secret-long-enough-for-this" {
		t.Errorf("secret from a file: %q, %v", got, err)
	}
	both := envMap(map[string]string{"GRANARY_CLUSTER_SECRET": "another-long-enough-secret"})
	if _, err := clusterSecret(ClusterConfig{NodeID: "a", SecretFile: file}, both); err == nil || !strings.Contains(err.Error(), "both") {
		t.Errorf("secret from both places: %v", err)
	}
}

// TestExampleClusterConfig keeps the cluster example loadable.
func TestExampleClusterConfig(t *testing.T) {
	c, err := loadWith(t, []string{"--config", filepath.Join("..", "..", "configs", "cluster.yaml"), "--data-dir", t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	peers, err := parsePeers(c.Cluster.Peers)
	if err != nil || len(peers) != 3 || c.Cluster.NodeID != "n1" || !c.Cluster.enabled() {
		t.Fatalf("cluster example: %+v, %v", c.Cluster, err)
	}
	everywhere := c.EverywhereRule()
	for _, tc := range []struct {
		bucket, key string
		want        bool
	}{{"datasets", "val/shard-0000.tar", true}, {"datasets", "train/shard-0000.tar", false}, {"other", "val/x", false}} {
		if got := everywhere(tc.bucket, tc.key); got != tc.want {
			t.Errorf("cluster example: %s/%s everywhere %v, want %v", tc.bucket, tc.key, got, tc.want)
		}
	}
	if rule := Defaults().EverywhereRule(); rule != nil {
		t.Error("the defaults have an everywhere rule; want none")
	}
}

// TestExampleConfig keeps the shipped example loadable.
func TestExampleConfig(t *testing.T) {
	c, err := loadWith(t, []string{"--config", filepath.Join("..", "..", "configs", "single-node.yaml"), "--data-dir", t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, buckets, err := c.Freshnesses()
	if err != nil || c.RAM != 8<<30 || buckets["imagenet"].Mode != gateway.Immutable || buckets["eval-results"].TTL != 10*time.Second {
		t.Fatalf("example: %+v %+v %v", c, buckets, err)
	}
	if _, err := parseOrigin(c.Origin); err != nil {
		t.Fatal(err)
	}
	mode, modes, err := c.WriteModes()
	if err != nil || mode != gateway.WriteThrough || modes["checkpoints"] != gateway.WriteBack || modes["imagenet"] != gateway.ReadOnly ||
		c.DirtyBytes() != 100<<30 {
		t.Fatalf("example write modes: %v %v %v, dirty limit %d", mode, modes, err, c.DirtyBytes())
	}
}

func TestEvictionPolicy(t *testing.T) {
	t.Chdir(t.TempDir())
	if c, err := loadWith(t, []string{"--eviction", "LRU"}, nil); err != nil || c.Eviction != "lru" {
		t.Fatalf("--eviction LRU: %q, %v", c.Eviction, err)
	}
	if c, err := loadWith(t, nil, map[string]string{"GRANARY_EVICTION": "tinylfu"}); err != nil || c.Eviction != "tinylfu" {
		t.Fatalf("GRANARY_EVICTION: %q, %v", c.Eviction, err)
	}
	if _, err := loadWith(t, []string{"--eviction", "fifo"}, nil); err == nil || !strings.Contains(err.Error(), "eviction") {
		t.Fatalf("--eviction fifo: %v, want an error naming the setting", err)
	}
}

// TestMaxConnsPerIPSetting: the limit comes from each source, and 0 (no
// limit) reaches api.Options as its negative "no limit".
func TestMaxConnsPerIPSetting(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"GRANARY_DATA_DIR": dir, "GRANARY_CONFIG": writeFile(t, dir, "c.yaml", "max-conns-per-ip: 0\n")}
	if c, err := loadWith(t, nil, env); err != nil || c.ConnsPerIP() != -1 {
		t.Fatalf("file 0: %d, %v; want -1 (no limit)", c.ConnsPerIP(), err)
	}
	env["GRANARY_MAX_CONNS_PER_IP"] = "64"
	if c, err := loadWith(t, nil, env); err != nil || c.ConnsPerIP() != 64 {
		t.Fatalf("environment 64: %d, %v", c.ConnsPerIP(), err)
	}
	if c, err := loadWith(t, []string{"--max-conns-per-ip", "8"}, env); err != nil || c.ConnsPerIP() != 8 {
		t.Fatalf("flag 8: %d, %v", c.ConnsPerIP(), err)
	}
}

func TestOwnersAndItsOldName(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want int
	}{
		{args: []string{"--config", writeFile(t, dir, "new.yaml", "owners: 3\n")}, want: 3},
		{args: []string{"--config", writeFile(t, dir, "old.yaml", "replicas: 2\n")}, want: 2},
		{args: []string{"--owners", "4"}, want: 4},
		{args: []string{"--replicas", "2"}, want: 2},
		{env: map[string]string{"GRANARY_REPLICAS": "3"}, want: 3},
		{env: map[string]string{"GRANARY_OWNERS": "5"}, want: 5},
		{want: 1},
	} {
		c, err := loadWith(t, append(tc.args, "--data-dir", dir), tc.env)
		if err != nil || c.Cluster.Owners != tc.want {
			t.Errorf("%v %v: owners %d, %v; want %d", tc.args, tc.env, c.Cluster.Owners, err, tc.want)
		}
	}
	_, err := loadWith(t, []string{"--config", writeFile(t, dir, "both.yaml", "owners: 3\nreplicas: 2\n"), "--data-dir", dir}, nil)
	if err == nil || !strings.Contains(err.Error(), "old name of owners") {
		t.Fatalf("a file with both names: %v", err)
	}
}
