// The sources a Config is filled from, in order of precedence: the YAML
// file, GRANARY_* environment variables and command-line flags. One table
// of settings drives the environment and the flags, so their names, help
// and parsing cannot drift apart.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// Getenv looks up an environment variable; tests pass a map instead of
// the process environment.
type Getenv func(name string) (string, bool)

// setting is one configurable value. Its flag name is its YAML key, and
// its environment variable is GRANARY_ followed by the name in upper case
// with '-' turned into '_'.
type setting struct {
	name    string
	usage   string
	list    bool // a repeatable flag; comma-separated in the environment
	boolean bool // a flag that takes no value (--name means true)
	get     func(Config) string
	set     func(*Config, string) error
}

func (s setting) env() string {
	return "GRANARY_" + strings.ToUpper(strings.ReplaceAll(s.name, "-", "_"))
}

func sizeSetting(name, usage string, field func(*Config) *Size) setting {
	return setting{
		name: name, usage: usage,
		get: func(c Config) string { return field(&c).String() },
		set: func(c *Config, v string) error {
			n, err := ParseSize(v)
			*field(c) = n
			return err
		},
	}
}

func stringSetting(name, usage string, field func(*Config) *string) setting {
	return setting{
		name: name, usage: usage,
		get: func(c Config) string { return *field(&c) },
		set: func(c *Config, v string) error { *field(c) = v; return nil },
	}
}

func boolSetting(name, usage string, field func(*Config) *bool) setting {
	return setting{
		name: name, usage: usage, boolean: true,
		get: func(c Config) string { return strconv.FormatBool(*field(&c)) },
		set: func(c *Config, v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("%q is not true or false", v)
			}
			*field(c) = b
			return nil
		},
	}
}

// serveSettings lists every setting of `granary serve`.
var serveSettings = []setting{
	stringSetting("listen", "`host:port` the S3 endpoint listens on",
		func(c *Config) *string { return &c.Listen }),
	stringSetting("data-dir", "`directory` for the disk cache (<data-dir>/cache), generated credentials and the default origin",
		func(c *Config) *string { return &c.DataDir }),
	sizeSetting("ram", "memory budget of the node: the RAM tier gets it less a working reserve (1/8, at most 256MiB) for chunks in flight (past half of it, read-ahead stops and new reads wait, then get 503 SlowDown); a `size` in bytes; units B, KB, MB, GB (x1000) or KiB, MiB, GiB (x1024), e.g. 512MiB, 1.5GB; 0 disables the RAM tier",
		func(c *Config) *Size { return &c.RAM }),
	sizeSetting("disk", "disk cache budget, a `size` (units as --ram); 0 disables the disk tier; in a cluster, copies of chunks other members own use what owned chunks leave",
		func(c *Config) *Size { return &c.Disk }),
	stringSetting("origin", "`URL` of the data: file:///ABS/DIR (each sub-directory a bucket), s3://HOST:PORT?secure=false&region=us-east-1 "+
		"(add &payload=crc32c to send uploads unsigned with a CRC32C the origin checks, a third of the CPU of signing them over HTTP; MinIO accepts it) "+
		"or hdfs://NN1:8020[,NN2:8020]/BASE (each directory under BASE a bucket; see the --hdfs-* flags); "+
		"origin credentials come from GRANARY_ORIGIN_ACCESS_KEY and GRANARY_ORIGIN_SECRET_KEY, or from the files named by GRANARY_ORIGIN_ACCESS_KEY_FILE and GRANARY_ORIGIN_SECRET_KEY_FILE "+
		"(default file://<data-dir>/origin)",
		func(c *Config) *string { return &c.Origin }),
	sizeSetting("chunk-size", "unit of caching, a `size` (units as --ram), 4KiB..1GiB",
		func(c *Config) *Size { return &c.ChunkSize }),
	stringSetting("freshness", "`mode` of trusting cached HEAD/LIST answers: immutable (never revalidated), ttl (revalidated after --ttl) or always (revalidated on every request); object data is keyed by ETag and never stale",
		func(c *Config) *string { return &c.Freshness }),
	{
		name: "ttl", usage: "metadata time-to-live with --freshness ttl, a Go `duration` like 90s, 5m, 1h",
		get: func(c Config) string { return c.TTL.String() },
		set: func(c *Config, v string) error { d, err := ParseDuration(v); c.TTL = d; return err },
	},
	stringSetting("write-mode", "what buckets do with writes: read-only (refused with AccessDenied), write-through (acknowledged once the origin has the object) "+
		"or write-back (acknowledged once it is durable on local disk under <data-dir>/writeback, uploaded to the origin in the background); per bucket in the YAML 'buckets:' map",
		func(c *Config) *string { return &c.WriteMode }),
	stringSetting("eviction", "`policy` of both cache tiers when full: tinylfu (keeps the chunks asked for most often lately; a new chunk replaces one only if it was asked for more often, so epochs over more data than the cache keep their hit rate) or lru (least recently used out)",
		func(c *Config) *string { return &c.Eviction }),
	stringSetting("hdfs-user", "user an hdfs:// origin acts as (SIMPLE auth; default: the user running granary)",
		func(c *Config) *string { return &c.HDFSUser }),
	stringSetting("hdfs-keytab", "Kerberos keytab `file` for an hdfs:// origin (with --hdfs-principal and --hdfs-krb5-conf; untested here: no KDC)",
		func(c *Config) *string { return &c.HDFSKeytab }),
	stringSetting("hdfs-principal", "Kerberos `principal` (user@REALM) for an hdfs:// origin",
		func(c *Config) *string { return &c.HDFSPrincipal }),
	stringSetting("hdfs-krb5-conf", "krb5.conf `file` for an hdfs:// origin's Kerberos login",
		func(c *Config) *string { return &c.HDFSKrb5Conf }),
	stringSetting("hdfs-service-principal", "the namenodes' Kerberos service `principal`, e.g. nn/_HOST",
		func(c *Config) *string { return &c.HDFSServicePrincipal }),
	stringSetting("hdfs-data-protection", "datanode transfer protection with Kerberos: authentication, integrity or privacy",
		func(c *Config) *string { return &c.HDFSDataProtection }),
	sizeSetting("dirty-limit", "write-back data not yet at the origin that the node accepts before it answers 503 SlowDown, a `size` (default: a quarter of --disk, at least 1GiB; shown for the default --disk)",
		func(c *Config) *Size { return &c.DirtyLimit }),
	stringSetting("region", "`region` reported to clients (GetBucketLocation)",
		func(c *Config) *string { return &c.Region }),
	{
		name: "domain", list: true,
		usage: "`domain` for virtual-host style requests (BUCKET.DOMAIN); repeat the flag for several, comma-separate them in the environment; path style always works",
		get:   func(c Config) string { return strings.Join(c.Domains, ",") },
		set: func(c *Config, v string) error {
			c.Domains = strings.Split(v, ",")
			return nil
		},
	},
	stringSetting("log-level", "log `level`: trace, debug, info, warn or error (JSON logs on stderr)",
		func(c *Config) *string { return &c.LogLevel }),
	stringSetting("tls-cert", "PEM certificate `file` (with --tls-key): S3, admin and peer routes are served over HTTPS (TLS 1.2+), the pair read again when its files change",
		func(c *Config) *string { return &c.TLSCert }),
	stringSetting("tls-key", "PEM private key `file` of --tls-cert",
		func(c *Config) *string { return &c.TLSKey }),
	stringSetting("peer-ca-file", "PEM CA `file` the members' certificates are verified against, with --tls-cert in a cluster (added to the system's pool)",
		func(c *Config) *string { return &c.PeerCAFile }),
	boolSetting("peer-mtls", "mutual TLS between members: each presents its --tls-cert to the others, and the peer routes refuse a call "+
		"whose connection did not present a certificate signed by --peer-ca-file (S3 clients need none); needs --tls-cert and --peer-ca-file",
		func(c *Config) *bool { return &c.PeerMTLS }),
	stringSetting("origin-ca-file", "PEM CA `file` an https S3 origin's certificate is verified against (added to the system's pool)",
		func(c *Config) *string { return &c.OriginCAFile }),
	{
		name: "origin-timeout", usage: "bound on each wait for the origin (connect, its answer, a body that stalls), a Go `duration`; past it the request gets the cached copy or 503, and after 3 in a row the origin's breaker opens (misses fail at once with 503 SlowDown until a probe finds it answering)",
		get: func(c Config) string { return c.OriginTimeout.String() },
		set: func(c *Config, v string) error { d, err := ParseDuration(v); c.OriginTimeout = d; return err },
	},
	{
		name: "origin-idle-probe", usage: "how long the origin may go unasked (a Go `duration`) before the node asks it for its bucket list, so /readyz, status and the breaker learn of an origin that died while no client asked; a node whose clients reach the origin sends none; 0: never",
		get: func(c Config) string { return c.OriginIdleProbe.String() },
		set: func(c *Config, v string) error { d, err := ParseDuration(v); c.OriginIdleProbe = d; return err },
	},
	boolSetting("require-origin", "exit at start (status 1, naming the cause) if the origin does not answer; by default the node serves its cache and logs the cause",
		func(c *Config) *bool { return &c.RequireOrigin }),
	boolSetting("serve-stale-when-down", "/readyz stays 200 while the origin is down (the node serves what it caches); false: 503 until the origin answers",
		func(c *Config) *bool { return &c.ServeStaleWhenDown }),
	stringSetting("users-file", "`file` of the users managed with 'granary user' (default <data-dir>/users.json); read again when it changes",
		func(c *Config) *string { return &c.UsersFile }),
	stringSetting("users-key-file", "`file` holding the key that seals the users' secrets (default <data-dir>/users.key)",
		func(c *Config) *string { return &c.UsersKeyFile }),
	{
		name: "max-conns-per-ip", usage: "open connections one client address may hold (a `number`); one over it is closed as soon as it is accepted; 0: no limit",
		get: func(c Config) string { return strconv.Itoa(c.MaxConnsPerIP) },
		set: func(c *Config, v string) error { n, err := strconv.Atoi(v); c.MaxConnsPerIP = n; return err },
	},
	boolSetting("get-lane", "answer plain signed GETs over plain HTTP in the node's own lean front end; false: every request through fasthttp",
		func(c *Config) *bool { return &c.GetLane }),
	stringSetting("metrics-auth", "who may read /metrics: open (anyone), or bearer:FILE (a scrape must send 'Authorization: Bearer TOKEN' with the token in FILE, read again when the file changes); /healthz stays open",
		func(c *Config) *string { return &c.MetricsAuth }),
	stringSetting("pprof-listen", "`host:port` to serve Go's profiler on (/debug/pprof/, unauthenticated: keep it on loopback); empty: off",
		func(c *Config) *string { return &c.PprofListen }),
}

// registerFlags adds one flag per setting to fs, with the default taken
// from def and the environment variable named in the help.
func registerFlags(fs *pflag.FlagSet, settings []setting, def Config) {
	for _, s := range settings {
		usage := fmt.Sprintf("%s [env %s]", s.usage, s.env())
		switch {
		case s.list:
			fs.StringArray(s.name, strings.Split(s.get(def), ","), usage)
		case s.boolean:
			fs.Bool(s.name, s.get(def) == "true", usage)
		default:
			fs.String(s.name, s.get(def), usage)
		}
	}
}

// applyFlags sets c from the flags of fs that were given on the command
// line; flags left at their default do not override earlier sources.
func applyFlags(c *Config, fs *pflag.FlagSet, settings []setting) error {
	for _, s := range settings {
		f := fs.Lookup(s.name)
		if f == nil || !f.Changed {
			continue
		}
		v := f.Value.String()
		if s.list {
			vals, err := fs.GetStringArray(s.name)
			if err != nil {
				return err
			}
			v = strings.Join(vals, ",")
		}
		if err := s.set(c, v); err != nil {
			return fmt.Errorf("flag --%s: %w", s.name, err)
		}
	}
	return nil
}

// applyEnv sets c from the GRANARY_* variables that are set and not empty.
func applyEnv(c *Config, getenv Getenv, settings []setting) error {
	for _, s := range settings {
		v, ok := getenv(s.env())
		if !ok || v == "" {
			continue
		}
		if err := s.set(c, v); err != nil {
			return fmt.Errorf("%s: %w", s.env(), err)
		}
	}
	return nil
}

// loadFile decodes the YAML file at path over c. Unknown keys are errors,
// and so is any key that looks like a secret: secrets belong in the
// environment or in files, never in a configuration file that gets copied,
// committed and pasted into issues.
func loadFile(c *Config, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	if key := findSecretKey(&root, ""); key != "" {
		return fmt.Errorf("config %s: key %q looks like a secret; secrets are never read from the config file: "+
			"set GRANARY_ACCESS_KEY/GRANARY_SECRET_KEY and GRANARY_ORIGIN_ACCESS_KEY/GRANARY_ORIGIN_SECRET_KEY "+
			"(or the *_FILE variants naming files that hold them) in the environment", path, key)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("config %s: %w", path, err)
	}
	if err := c.Cluster.takeLegacyReplicas(&root); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	return nil
}

// hasTopKey reports whether the document root's mapping has key.
func hasTopKey(root *yaml.Node, key string) bool {
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == key {
			return true
		}
	}
	return false
}

// secretWords mark a YAML key as a secret, compared after dropping '-'
// and '_' and lower-casing.
var secretWords = []string{"secret", "password", "accesskey", "credential", "token", "passphrase"}

// whereSecretsAre are the keys that name where a secret is kept.
var whereSecretsAre = map[string]bool{
	"cluster-secret-file": true, "users-key-file": true, // settings
	"secret-file": true, "secret-env": true, // of a declared user
}

// findSecretKey returns the dotted path of the first mapping key under n
// that names a secret, or "". Keys are visited in sorted order so the
// answer does not depend on the file's order.
func findSecretKey(n *yaml.Node, prefix string) string {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			if k := findSecretKey(c, prefix); k != "" {
				return k
			}
		}
	case yaml.MappingNode:
		var found []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			path := strings.TrimPrefix(prefix+"."+key, ".")
			if isSecretKey(key) {
				found = append(found, path)
			} else if k := findSecretKey(n.Content[i+1], path); k != "" {
				found = append(found, k)
			}
		}
		sort.Strings(found)
		if len(found) > 0 {
			return found[0]
		}
	}
	return ""
}

func isSecretKey(key string) bool {
	if whereSecretsAre[key] {
		return false // a setting naming where a secret is, not a secret
	}
	k := strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(key))
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// LoadConfig builds the configuration of `granary serve`: defaults, then
// the file (path from --config, else GRANARY_CONFIG), then the
// environment, then the flags given, then Normalize.
func LoadConfig(fs *pflag.FlagSet, getenv Getenv) (Config, error) {
	c := Defaults()
	path, _ := fs.GetString("config")
	if f := fs.Lookup("config"); f == nil || !f.Changed {
		path, _ = getenv("GRANARY_CONFIG")
	}
	if path != "" {
		if err := loadFile(&c, path); err != nil {
			return c, err
		}
	}
	if err := applyEnv(&c, getenv, serveSettings); err != nil {
		return c, err
	}
	if err := applyFlags(&c, fs, serveSettings); err != nil {
		return c, err
	}
	return c.Normalize()
}
