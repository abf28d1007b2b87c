// `granary serve`: turns the Config into the packages' Options, runs the
// S3 endpoint until SIGINT/SIGTERM and shuts it down gracefully.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/granary-dev/granary/api"
)

// shutdownGrace bounds how long open requests may run after a signal.
const shutdownGrace = 30 * time.Second

func newServeCmd(getenv Getenv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a Granary node (S3 endpoint with a RAM and a disk cache)",
		Long: `Run a Granary node: an S3 endpoint that caches an origin in RAM and on disk.

With no configuration it listens on 127.0.0.1:9000, caches in ./granary-data
(1GiB RAM, 10GiB disk), serves the directories under ./granary-data/origin as
buckets, and prints the credentials it generated (kept in
./granary-data/credentials, mode 0600, and reused on later starts, which
print the access key and that file's path, not the secret).

Precedence: defaults < YAML file (--config) < GRANARY_* environment < flags.
The YAML keys are the flag names; the file may also hold 'users:' and
'anonymous:' (see the README) and a 'buckets:' map, by bucket name, of:
  freshness       immutable, ttl or always (else the node's --freshness)
  ttl             metadata time-to-live, e.g. 10s (alone: freshness ttl)
  write-mode      read-only, write-through or write-back
  pin             prefixes whose cached data is never evicted
  everywhere      in a cluster, prefixes every member owns: each chunk is
                  read from the origin once and placed on every member
  quota           the most the bucket may hold in each tier, e.g. 20GiB
  anonymous-read  true: unsigned GETs and HEADs of its objects are served
  warm            scheduled warm-ups: a list of {prefix, schedule (cron or
                  @daily, @every 6h), metadata-only, parallel}
The origin is a file:// directory, an s3:// service, or HDFS
(hdfs://NN1:8020[,NN2:8020]/BASE, with the --hdfs-* flags).
Secrets are never read from the file:
  GRANARY_ACCESS_KEY, GRANARY_SECRET_KEY          the node's S3 credentials
  GRANARY_ORIGIN_ACCESS_KEY, GRANARY_ORIGIN_SECRET_KEY  the s3 origin's
Each may instead be given as a file path in the same name + _FILE.

Metrics are served at /metrics, health at /healthz; logs are JSON on stderr.`,
		Example: `  granary serve
  granary serve --ram 4GiB --disk 200GiB --data-dir /nvme/granary
  GRANARY_ORIGIN_ACCESS_KEY=... GRANARY_ORIGIN_SECRET_KEY=... \
    granary serve --origin 's3://minio.internal:9000?secure=false'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if p, _ := cmd.Flags().GetBool("print-config"); p {
				return printConfig(cmd.OutOrStdout(), cmd.Flags(), getenv)
			}
			return runServe(cmd.Context(), cmd.Flags(), getenv, cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.String("config", "", "YAML configuration `file` [env GRANARY_CONFIG]")
	fl.Bool("print-config", false, "print the configuration the file, environment and flags give, as YAML, and exit without serving (exit 2 if it is not valid)")
	registerFlags(fl, serveSettings, Defaults())
	// Its zero value means "derived from --disk": show what that gives.
	fl.Lookup("dirty-limit").DefValue = Size(Defaults().DirtyBytes()).String()
	return cmd
}

// runServe loads the configuration, builds the node and serves until ctx
// ends. Configuration errors are usageErrors.
func runServe(ctx context.Context, flags *pflag.FlagSet, getenv Getenv, stderr io.Writer) error {
	cfg, err := LoadConfig(flags, getenv)
	if err != nil {
		return usageError{err}
	}
	spec, err := parseOrigin(cfg.Origin)
	if err != nil {
		return usageError{err}
	}
	oak, osk, err := originCredentials(getenv)
	if err != nil {
		return usageError{err}
	}
	level, _ := zerolog.ParseLevel(cfg.LogLevel) // checked by Normalize
	log := zerolog.New(stderr).Level(level).With().Timestamp().Logger()
	creds, err := LoadCredentials(getenv, cfg.DataDir)
	if errors.As(err, new(*keyError)) {
		return usageError{fmt.Errorf("credentials: %w", err)}
	}
	if err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	keys, users, err := openAccess(cfg, creds, getenv, log)
	if err != nil {
		return err
	}
	defer users.Close()
	var secret []byte
	if cfg.Cluster.enabled() {
		if secret, err = clusterSecret(cfg.Cluster, getenv); err != nil {
			return usageError{err}
		}
	}
	// Listen first: a cluster member advertises the address it got
	// (port 0 picks one; an activated socket has its own).
	ln, err := listen(cfg.Listen, getenv)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	cfg.Listen = ln.Addr().String()
	n, err := buildNode(cfg, spec, oak, osk, keys, secret, log)
	if err != nil {
		ln.Close()
		return err
	}
	defer n.close(log)
	limitMemory(cfg, getenv, log)
	reportTimerSlack(timerSlackAdopted, log)
	stopPprof, err := startPprof(cfg.PprofListen, log)
	if err != nil {
		ln.Close()
		return fmt.Errorf("pprof listen: %w", err)
	}
	defer stopPprof()
	scheme := "http://"
	if n.tls != nil {
		scheme = "https://"
	}
	printBanner(stderr, scheme+ln.Addr().String(), n.gossip, cfg, creds)
	log.Info().Str("addr", ln.Addr().String()).Str("origin", cfg.Origin).
		Stringer("ram", cfg.RAM).Stringer("disk", cfg.Disk).Str("data_dir", cfg.DataDir).
		Str("version", Version()).Msg("granary serving")
	return serveUntilDone(ctx, n.server, ln, log)
}

// serveUntilDone serves on ln until ctx ends or serving fails, then shuts
// the server down, giving open requests shutdownGrace to finish.
func serveUntilDone(ctx context.Context, srv *api.Server, ln net.Listener, log zerolog.Logger) error {
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		if err == nil {
			err = errors.New("server stopped by itself")
		}
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info().Msg("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-served; serr != nil && err == nil && !errors.Is(serr, net.ErrClosed) {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info().Msg("stopped")
	return nil
}

// printBanner tells a person where the node listens (and gossips, if
// gossip is set) and how to use it.
func printBanner(w io.Writer, url, gossip string, cfg Config, c Credentials) {
	var b strings.Builder
	fmt.Fprintf(&b, "\nGranary is serving S3 at %s (region %s)\n", url, cfg.Region)
	if gossip != "" {
		fmt.Fprintf(&b, "  gossip: %s (other nodes join with --join %s)\n", gossip, gossip)
	}
	fmt.Fprintf(&b, "  origin: %s\n  cache:  %s RAM, %s disk in %s\n", cfg.Origin, cfg.RAM, cfg.Disk, filepath.Join(cfg.DataDir, "cache"))
	fmt.Fprintf(&b, "  console: %s/_granary/console/ (in a browser; sign in with the credentials below)\n", url)
	b.WriteString(credentialsBanner(c, cfg.Region))
	b.WriteString("  clients: aws and boto3 read those AWS_* variables; granary warm, mount, status, flush and pin read\n" +
		"    GRANARY_ACCESS_KEY / GRANARY_SECRET_KEY, or the AWS_* ones when those are unset\n")
	fmt.Fprintf(&b, "  try:    aws --endpoint-url %s s3 ls\n          %s status --endpoint %s\n\n", url, selfCommand(), url)
	io.WriteString(w, b.String())
}

// selfCommand is how the person who started this process runs granary
// again, for the banner's examples.
func selfCommand() string {
	exe, _ := os.Executable()
	return invocation(os.Args[0], exe)
}

// invocation is selfCommand for a process started as arg0 from the
// binary exe: "go run ./cmd/granary" for a binary `go run` built (in a
// go-build directory of the build cache), the path typed for one run by
// path ("bin/granary"), else "granary" (found on the PATH).
func invocation(arg0, exe string) string {
	switch {
	case strings.Contains(exe, string(filepath.Separator)+"go-build"):
		return "go run ./cmd/granary"
	case strings.ContainsRune(arg0, filepath.Separator):
		return arg0
	default:
		return "granary"
	}
}

// credentialsBanner is the banner's credentials lines (to stderr, never
// to the log). The secret is printed only by the start that generated it,
// since nobody else knows it yet; every other start names the access key
// and where the secret is, so a terminal, a scroll-back or a collected
// stderr of a long-lived node does not hold the secret on every restart.
func credentialsBanner(c Credentials, region string) string {
	switch {
	case c.Source == "generated":
		return fmt.Sprintf("  credentials (generated now and stored in %s; the secret is shown this once):\n"+
			"    export AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s AWS_DEFAULT_REGION=%s\n", c.Path, c.AccessKey, c.SecretKey, region)
	case c.Source == "file":
		return fmt.Sprintf("  credentials: access key %s, secret in %s; to use them:\n"+
			"    . %s && export AWS_ACCESS_KEY_ID=$GRANARY_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$GRANARY_SECRET_KEY AWS_DEFAULT_REGION=%s\n",
			c.AccessKey, c.Path, c.Path, region)
	case c.Path != "":
		return fmt.Sprintf("  credentials: access key %s (from the environment), secret in %s (GRANARY_SECRET_KEY_FILE); to use them:\n"+
			"    export AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=$(cat %s) AWS_DEFAULT_REGION=%s\n", c.AccessKey, c.Path, c.AccessKey, c.Path, region)
	}
	return fmt.Sprintf("  credentials: access key %s, secret from the environment (GRANARY_SECRET_KEY); to use them:\n"+
		"    export AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=$GRANARY_SECRET_KEY AWS_DEFAULT_REGION=%s\n", c.AccessKey, c.AccessKey, region)
}

// reportTimerSlack logs threads that kept their timer slack (see
// timerslack.go): the process lacks CAP_SYS_NICE.
func reportTimerSlack(r slackResult, log zerolog.Logger) {
	if r.kept > 0 {
		log.Info().Int("threads", r.kept).Dur("slack", r.want).
			Msg("some threads kept their timer slack (setting it needs CAP_SYS_NICE); those made later take it")
	}
}

// gcHeadroom is how far past the memory budget the Go heap may grow
// before the garbage collector holds it back; it covers garbage awaiting
// collection and the runtime's own memory.
const gcHeadroom = 192 << 20

// limitMemory sets the Go runtime's soft memory limit to the memory budget
// plus gcHeadroom (unless GOMEMLIMIT says otherwise). Without it the
// garbage collector lets the heap grow to twice the live data, so a full
// RAM tier of N bytes would cost up to 2N of RSS.
func limitMemory(cfg Config, getenv Getenv, log zerolog.Logger) {
	if v, _ := getenv("GOMEMLIMIT"); v != "" {
		return
	}
	limit := int64(cfg.RAM) + gcHeadroom
	debug.SetMemoryLimit(limit)
	log.Debug().Int64("bytes", limit).Msg("go memory limit set")
}
