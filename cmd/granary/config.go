// Configuration of `granary serve`: one plain Config struct filled from
// defaults, then the YAML file, then GRANARY_* environment variables, then
// flags (each later source wins), and normalised once before use.
package main

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"go.yaml.in/yaml/v3"

	"github.com/granary-dev/granary/api"
	"github.com/granary-dev/granary/cluster/peer"
	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/origin/guard"
)

// Config holds every non-secret setting of a node. The YAML keys are the
// flag names. Secrets (credentials) never live here: see credentials.go.
type Config struct {
	Listen    string     `yaml:"listen"`
	DataDir   string     `yaml:"data-dir"`
	RAM       Size       `yaml:"ram"`
	Disk      Size       `yaml:"disk"`
	Origin    string     `yaml:"origin"`
	ChunkSize Size       `yaml:"chunk-size"`
	Freshness string     `yaml:"freshness"`
	TTL       Duration   `yaml:"ttl"`
	Region    string     `yaml:"region"`
	Domains   StringList `yaml:"domain"`
	LogLevel  string     `yaml:"log-level"`
	// TLSCert and TLSKey, if set, serve HTTPS with that pair (tls.go);
	// PeerCAFile is what members' certificates are verified against,
	// OriginCAFile an https origin's. PeerMTLS makes members present
	// their pair to each other and refuse peer calls without one.
	TLSCert      string `yaml:"tls-cert"`
	TLSKey       string `yaml:"tls-key"`
	PeerCAFile   string `yaml:"peer-ca-file"`
	PeerMTLS     bool   `yaml:"peer-mtls"`
	OriginCAFile string `yaml:"origin-ca-file"`
	// OriginTimeout bounds each wait for the origin (connect, answer,
	// a stalled body); RequireOrigin makes a failed start-up check of
	// the origin fatal; ServeStaleWhenDown keeps /readyz at 200 while the
	// origin is down (the cache still serves what it holds).
	OriginTimeout      Duration `yaml:"origin-timeout"`
	RequireOrigin      bool     `yaml:"require-origin"`
	ServeStaleWhenDown bool     `yaml:"serve-stale-when-down"`
	// OriginIdleProbe is how long the origin may go unasked before the
	// node asks it (guard.Options.IdleProbe); 0 means never.
	OriginIdleProbe Duration `yaml:"origin-idle-probe"`
	// GetLane has the node answer plain signed GETs itself (api's GET
	// lane) rather than through fasthttp.
	GetLane bool `yaml:"get-lane"`
	// UsersFile holds the users `granary user` manages, their secrets
	// sealed with the key in UsersKeyFile (users.go); "" means users.json
	// and users.key under DataDir.
	UsersFile    string `yaml:"users-file"`
	UsersKeyFile string `yaml:"users-key-file"`
	// Users are users declared here, their secrets in files or the
	// environment; Anonymous grants requests without credentials.
	Users     []UserConfig `yaml:"users"`
	Anonymous []string     `yaml:"anonymous"`
	// PprofListen, if set, serves Go's profiler there (pprof.go).
	PprofListen string `yaml:"pprof-listen"`
	// MaxConnsPerIP bounds the open connections of one client address;
	// 0 means no limit (api.Options says it with a negative value).
	MaxConnsPerIP int `yaml:"max-conns-per-ip"`
	// MetricsAuth is "open" or "bearer:FILE" (metrics_auth.go).
	MetricsAuth string `yaml:"metrics-auth"`
	WriteMode   string `yaml:"write-mode"`
	// Eviction is the tiers' policy: tinylfu or lru.
	Eviction string `yaml:"eviction"`
	// HDFS origin settings (hdfs:// origins only).
	HDFSUser             string `yaml:"hdfs-user"`
	HDFSKeytab           string `yaml:"hdfs-keytab"`
	HDFSPrincipal        string `yaml:"hdfs-principal"`
	HDFSKrb5Conf         string `yaml:"hdfs-krb5-conf"`
	HDFSServicePrincipal string `yaml:"hdfs-service-principal"`
	HDFSDataProtection   string `yaml:"hdfs-data-protection"`
	// DirtyLimit bounds write-back data not yet at the origin.
	DirtyLimit Size                    `yaml:"dirty-limit"`
	Buckets    map[string]BucketConfig `yaml:"buckets"`
	// Cluster holds the cluster settings (cluster.go).
	Cluster ClusterConfig `yaml:",inline"`
}

// BucketConfig overrides the rules of one bucket. A bucket that sets only
// TTL uses freshness "ttl"; one that sets neither inherits the node's
// freshness; an empty WriteMode inherits the node's.
type BucketConfig struct {
	Freshness string   `yaml:"freshness"`
	TTL       Duration `yaml:"ttl"`
	WriteMode string   `yaml:"write-mode"`
	// ServeStale false never serves the bucket's metadata past its
	// freshness rule: with the origin down, such reads fail (503) after
	// --origin-timeout instead of being answered from the cache.
	ServeStale *bool `yaml:"serve-stale"`
	// Warm lists scheduled warm-ups of the bucket (schedule.go).
	Warm []WarmSchedule `yaml:"warm"`
	// Pin lists prefixes whose cached data is never evicted.
	Pin []string `yaml:"pin"`
	// Everywhere lists prefixes whose objects every cluster member owns:
	// each chunk read from the origin once and placed on every member
	// (a node alone owns everything anyway).
	Everywhere []string `yaml:"everywhere"`
	// Quota caps the bucket's cached bytes in each tier (0: none).
	Quota Size `yaml:"quota"`
	// AnonymousRead lets requests without credentials GET and HEAD the
	// bucket's objects (nothing else), as a public-read bucket does.
	AnonymousRead bool `yaml:"anonymous-read"`
}

// UserConfig declares a user in the configuration file. Its secret is
// read from SecretFile or the environment variable SecretEnv, never from
// the file itself.
type UserConfig struct {
	Name       string   `yaml:"name"` // the access key
	SecretFile string   `yaml:"secret-file"`
	SecretEnv  string   `yaml:"secret-env"`
	Allow      []string `yaml:"allow"` // grants, as access.ParseGrant reads them
}

// quotaMap is the buckets' quotas, a store.Quotas.
type quotaMap map[string]int64

func (q quotaMap) Quota(bucket string) int64 { return q[bucket] }

// Quotas returns the buckets' quotas, or nil if none has one.
func (c Config) Quotas() store.Quotas {
	q := quotaMap{}
	for name, b := range c.Buckets {
		if b.Quota > 0 {
			q[name] = int64(b.Quota)
		}
	}
	if len(q) == 0 {
		return nil
	}
	return q
}

// ConfiguredPins returns the pinned prefixes of the configuration file,
// by bucket.
func (c Config) ConfiguredPins() map[string][]string {
	return c.prefixes(func(b BucketConfig) []string { return b.Pin })
}

// EverywhereRule reports whether bucket/key lies under one of its
// bucket's everywhere prefixes (gateway.Options.Everywhere), or is nil if
// no bucket has any. Safe for concurrent use.
func (c Config) EverywhereRule() func(bucket, key string) bool {
	everywhere := c.prefixes(func(b BucketConfig) []string { return b.Everywhere })
	if len(everywhere) == 0 {
		return nil
	}
	return func(bucket, key string) bool {
		return slices.ContainsFunc(everywhere[bucket], func(p string) bool { return strings.HasPrefix(key, p) })
	}
}

// prefixes returns a per-bucket list of prefixes of the configuration
// file (field picks it), by bucket, without the buckets that list none.
func (c Config) prefixes(field func(BucketConfig) []string) map[string][]string {
	out := map[string][]string{}
	for name, b := range c.Buckets {
		if list := field(b); len(list) > 0 {
			out[name] = list
		}
	}
	return out
}

// Defaults returns the configuration of a node started with nothing set.
// Origin stays empty: it defaults to file://<data-dir>/origin, which is
// only known once the data directory is.
func Defaults() Config {
	return Config{
		Listen:    "127.0.0.1:9000",
		DataDir:   "./granary-data",
		RAM:       1 << 30,
		Disk:      10 << 30,
		ChunkSize: gateway.DefaultChunkSize,
		Freshness: string(gateway.TTL),
		TTL:       Duration(time.Minute),
		Region:    "us-east-1",
		Domains:   StringList{"localhost"},
		LogLevel:  "info",
		WriteMode: string(gateway.WriteThrough),
		Eviction:  "tinylfu",
		Cluster:   ClusterConfig{Owners: 1, PeerTimeout: Duration(peer.DefaultTimeout)},

		OriginTimeout:      Duration(guard.DefaultTimeout),
		ServeStaleWhenDown: true,
		OriginIdleProbe:    Duration(guard.DefaultIdleProbe),
		GetLane:            true,

		MaxConnsPerIP: api.DefaultMaxConnsPerIP,
		MetricsAuth:   metricsAuthOpen,
		// DirtyLimit 0: a quarter of the disk budget (see DirtyBytes).
	}
}

// Limits on the chunk size: the engine's floor, and a ceiling above which a
// single chunk would be a large share of any sensible RAM budget.
const (
	minChunkSize = 4 << 10
	maxChunkSize = 1 << 30
)

// Normalize validates c and fills what derives from other fields: an
// absolute data directory, the default origin, a lower-cased domain list.
// It is called once, after every source has been applied.
func (c Config) Normalize() (Config, error) {
	if err := checkListen(c.Listen); err != nil {
		return c, err
	}
	if err := c.checkTLS(); err != nil {
		return c, err
	}
	if strings.TrimSpace(c.DataDir) == "" {
		return c, errors.New("data-dir: must not be empty")
	}
	dir, err := filepath.Abs(c.DataDir)
	if err != nil {
		return c, fmt.Errorf("data-dir: %w", err)
	}
	c.DataDir = dir
	if c.Origin == "" {
		c.Origin = "file://" + filepath.ToSlash(filepath.Join(dir, "origin"))
	}
	if _, err := parseOrigin(c.Origin); err != nil {
		return c, err
	}
	if err := c.checkSizes(); err != nil {
		return c, err
	}
	if _, err := zerolog.ParseLevel(strings.ToLower(c.LogLevel)); err != nil || c.LogLevel == "" {
		return c, fmt.Errorf("log-level: unknown level %q (want trace, debug, info, warn, error)", c.LogLevel)
	}
	c.LogLevel = strings.ToLower(c.LogLevel)
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	if c.Domains, err = normalizeDomains(c.Domains); err != nil {
		return c, err
	}
	if _, _, err := c.Freshnesses(); err != nil {
		return c, err
	}
	if _, _, err := c.WriteModes(); err != nil {
		return c, err
	}
	if err := c.checkSchedules(); err != nil {
		return c, err
	}
	if err := c.checkAccess(); err != nil {
		return c, err
	}
	if err := c.Cluster.check(c.Listen); err != nil {
		return c, err
	}
	if _, err := metricsTokenFile(c.MetricsAuth); err != nil {
		return c, err
	}
	if c.OriginTimeout <= 0 {
		return c, errors.New("origin-timeout: must be positive")
	}
	if c.OriginIdleProbe < 0 {
		return c, errors.New("origin-idle-probe: must not be negative (0 means never)")
	}
	if c.MaxConnsPerIP < 0 {
		return c, fmt.Errorf("max-conns-per-ip: %d is negative (0 means no limit)", c.MaxConnsPerIP)
	}
	switch c.Eviction = strings.ToLower(c.Eviction); c.Eviction {
	case "tinylfu", "lru":
	default:
		return c, fmt.Errorf("eviction: unknown policy %q (want tinylfu or lru)", c.Eviction)
	}
	return c, nil
}

// checkTLS refuses a half-given pair, and mutual TLS without what it
// needs.
func (c Config) checkTLS() error {
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return errors.New("tls-cert, tls-key: give both or neither")
	}
	if c.PeerMTLS && (c.TLSCert == "" || c.PeerCAFile == "") {
		return errors.New("peer-mtls: needs tls-cert and tls-key (the certificate this node presents to its members) " +
			"and peer-ca-file (the CA their certificates are verified against)")
	}
	return nil
}

// WriteModes returns the node's write mode and the per-bucket ones.
func (c Config) WriteModes() (gateway.WriteMode, map[string]gateway.WriteMode, error) {
	def, err := gateway.ParseWriteMode(strings.ToLower(c.WriteMode))
	if err != nil {
		return def, nil, fmt.Errorf("write-mode: %w", err)
	}
	modes := make(map[string]gateway.WriteMode, len(c.Buckets))
	for name, b := range c.Buckets {
		if b.WriteMode == "" {
			continue
		}
		if modes[name], err = gateway.ParseWriteMode(strings.ToLower(b.WriteMode)); err != nil {
			return def, nil, fmt.Errorf("buckets.%s.write-mode: %w", name, err)
		}
	}
	return def, modes, nil
}

// ConnsPerIP is MaxConnsPerIP as api.Options takes it.
func (c Config) ConnsPerIP() int {
	if c.MaxConnsPerIP == 0 {
		return -1 // no limit
	}
	return c.MaxConnsPerIP
}

// DirtyBytes is the write-back limit: DirtyLimit, or a quarter of the disk
// budget (at least 1 GiB) when unset.
func (c Config) DirtyBytes() int64 {
	if c.DirtyLimit > 0 {
		return int64(c.DirtyLimit)
	}
	return max(int64(c.Disk)/4, 1<<30)
}

func checkListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen: %q is not HOST:PORT: %w", addr, err)
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || (p == 0 && port != "0") {
		return fmt.Errorf("listen: bad port %q in %q", port, addr)
	}
	return nil
}

// checkSizes enforces what the tiers need: at least one tier, and a chunk
// that fits in every enabled tier (a larger chunk could never be cached).
func (c Config) checkSizes() error {
	if c.ChunkSize < minChunkSize || c.ChunkSize > maxChunkSize {
		return fmt.Errorf("chunk-size: %s is outside %s..%s", c.ChunkSize, Size(minChunkSize), Size(maxChunkSize))
	}
	if c.RAM == 0 && c.Disk == 0 {
		return errors.New("ram and disk are both 0: at least one cache tier is needed")
	}
	if c.RAM > 0 && c.RAM < c.ChunkSize {
		return fmt.Errorf("ram: budget %s is smaller than one chunk (%s); raise --ram or lower --chunk-size, or set --ram 0 to disable the RAM tier", c.RAM, c.ChunkSize)
	}
	if c.Disk > 0 && c.Disk < c.ChunkSize {
		return fmt.Errorf("disk: budget %s is smaller than one chunk (%s); raise --disk or set --disk 0 to disable the disk tier", c.Disk, c.ChunkSize)
	}
	return nil
}

func normalizeDomains(in StringList) (StringList, error) {
	out := make(StringList, 0, len(in))
	for _, d := range in {
		d = strings.ToLower(strings.TrimSpace(d))
		if d == "" {
			continue
		}
		if strings.ContainsAny(d, ":/ ") {
			return nil, fmt.Errorf("domain: %q must be a bare host name (no scheme, port or path)", d)
		}
		out = append(out, d)
	}
	return out, nil
}

// Freshnesses returns the node's metadata rule and the per-bucket ones in
// the gateway's terms.
func (c Config) Freshnesses() (gateway.Freshness, map[string]gateway.Freshness, error) {
	def, err := freshness("", c.Freshness, c.TTL)
	if err != nil {
		return def, nil, err
	}
	buckets := make(map[string]gateway.Freshness, len(c.Buckets))
	for name, b := range c.Buckets {
		if name == "" {
			return def, nil, errors.New("buckets: empty bucket name")
		}
		mode, ttl := b.Freshness, b.TTL
		if mode == "" && ttl > 0 {
			mode = string(gateway.TTL)
		} else if mode == "" {
			mode = c.Freshness
		}
		if ttl == 0 {
			ttl = c.TTL
		}
		if buckets[name], err = freshness("buckets."+name+".", mode, ttl); err != nil {
			return def, nil, err
		}
		if b.ServeStale != nil && !*b.ServeStale {
			f := buckets[name]
			f.NoStale = true
			buckets[name] = f
		}
	}
	return def, buckets, nil
}

func freshness(prefix, mode string, ttl Duration) (gateway.Freshness, error) {
	f := gateway.Freshness{Mode: gateway.FreshMode(strings.ToLower(mode)), TTL: time.Duration(ttl)}
	switch f.Mode {
	case gateway.Immutable, gateway.Always:
	case gateway.TTL:
		if f.TTL <= 0 {
			return f, fmt.Errorf("%sttl: must be positive with freshness ttl", prefix)
		}
	default:
		return f, fmt.Errorf("%sfreshness: unknown mode %q (want immutable, ttl or always)", prefix, mode)
	}
	return f, nil
}

// Duration is a time.Duration that YAML gives as a string ("90s", "5m").
type Duration time.Duration

// ParseDuration parses a non-negative Go duration ("1m", "90s", "1h30m").
func ParseDuration(s string) (Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: want a number with a unit, e.g. 90s, 5m, 1h", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("invalid duration %q: negative", s)
	}
	return Duration(d), nil
}

func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalYAML accepts a duration string; a bare number is refused
// because its unit would be a guess.
func (d *Duration) UnmarshalYAML(node *yaml.Node) error {
	if node.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: a duration must be a string like 90s", node.Line)
	}
	v, err := ParseDuration(node.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", node.Line, err)
	}
	*d = v
	return nil
}

// StringList is a list that YAML may give as one string or a sequence.
type StringList []string

// UnmarshalYAML accepts a scalar (one element) or a sequence of scalars.
func (l *StringList) UnmarshalYAML(node *yaml.Node) error {
	if node.Kind == yaml.ScalarNode {
		*l = StringList{node.Value}
		return nil
	}
	var v []string
	if err := node.Decode(&v); err != nil {
		return err
	}
	*l = v
	return nil
}
