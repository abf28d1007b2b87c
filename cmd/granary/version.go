// `granary version`: the binary's version and, with --endpoint, the
// version and health of a running node.
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// version is set at link time (-ldflags "-X main.version=v1.2.3"); when it
// is not, the module version or VCS revision recorded in the binary is
// used.
var version = ""

// Version returns the binary's version string.
func Version() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return "devel-" + rev
}

// versionLine is what `granary version` and `granary --version` print
// first.
func versionLine() string {
	return fmt.Sprintf("granary %s (%s, %s/%s)", Version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func newVersionCmd(getenv Getenv) *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version (and, with --endpoint, a node's version and health)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintln(out, versionLine())
			if env, _ := getenv("GRANARY_ENDPOINT"); !cmd.Flags().Changed("endpoint") && env == "" {
				return nil // no node named: the binary's version only
			}
			node, err := cf.Remote(getenv)
			if err != nil {
				return usageError{err}
			}
			h, err := health(cmd.Context(), node)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "server %s: %s\n", node.url, h)
			return nil
		},
	}
	cf.register(cmd.Flags())
	return cmd
}

// serverHeaderPrefix starts the Server header of a node's answers; the
// rest is its version.
const serverHeaderPrefix = "granary/"

// nodeHealth is what a node's /healthz says: its version (from the Server
// header; "" from a node too old to send it) and its answer.
type nodeHealth struct {
	version string
	status  string
}

func (h nodeHealth) String() string {
	v := "granary " + h.version
	if h.version == "" {
		v = "version unknown (the node does not send it)"
	}
	return fmt.Sprintf("%s, health %s", v, h.status)
}

// health asks node's /healthz.
func health(ctx context.Context, node remote) (nodeHealth, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, node.url+"/healthz", nil)
	if err != nil {
		return nodeHealth{}, err
	}
	tr := node.transport()
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return nodeHealth{}, fmt.Errorf("health check: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	status := strings.TrimSpace(resp.Status + " " + strings.TrimSpace(string(body)))
	if resp.StatusCode != http.StatusOK {
		return nodeHealth{}, fmt.Errorf("health check: %s", status)
	}
	v, ok := strings.CutPrefix(resp.Header.Get("Server"), serverHeaderPrefix)
	if !ok {
		v = ""
	}
	return nodeHealth{version: v, status: status}, nil
}
