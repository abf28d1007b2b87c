// `granary inject`: the mutating admission webhook that adds the mount
// sidecar to pods labelled granary.dev/mount (package inject), served over
// HTTPS until SIGINT/SIGTERM.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/granary-dev/granary/inject"
)

// injectFlags are the webhook's settings.
type injectFlags struct {
	listen, cert, key string
	opts              inject.Options
}

func newInjectCmd() *cobra.Command {
	var f injectFlags
	cmd := &cobra.Command{
		Use:   "inject",
		Short: "Serve the admission webhook that adds the mount sidecar to labelled pods",
		Long: `Serve a Kubernetes mutating admission webhook (HTTPS, any path) that adds a
'granary mount' native sidecar to every pod labelled granary.dev/mount=BUCKET:
the annotation granary.dev/user names the user whose secret (the key of
that name in the users Secret, in the pod's namespace) the mount signs
with, granary.dev/prefix the prefix to mount and granary.dev/mount-path
where every container sees it (default /mnt/data), read-only. See
deploy/kubernetes/overlays/inject for the Deployment and the
MutatingWebhookConfiguration.`,
		Example: `  granary inject --tls-cert /tls/tls.crt --tls-key /tls/tls.key --endpoint http://granary.granary.svc:9000`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.cert == "" || f.key == "" {
				return usageError{errors.New("--tls-cert and --tls-key are needed: the API server calls webhooks over HTTPS only")}
			}
			return serveInject(cmd.Context(), f, cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "0.0.0.0:8443", "address to serve the webhook on")
	fl.StringVar(&f.cert, "tls-cert", "", "PEM certificate of the webhook's Service name")
	fl.StringVar(&f.key, "tls-key", "", "PEM key of --tls-cert")
	fl.StringVar(&f.opts.Endpoint, "endpoint", inject.DefaultEndpoint, "the Granary Service the injected mounts read through")
	fl.StringVar(&f.opts.Image, "image", inject.DefaultImage, "the granary image the sidecar runs (keep it this webhook's own)")
	fl.StringVar(&f.opts.UsersSecret, "users-secret", inject.DefaultUsersSecret, "the Secret, in each pod's namespace, holding the users' secrets")
	return cmd
}

// serveInject serves the webhook until ctx ends.
func serveInject(ctx context.Context, f injectFlags, log io.Writer) error {
	pair, err := tls.LoadX509KeyPair(f.cert, f.key)
	if err != nil {
		return usageError{fmt.Errorf("--tls-cert/--tls-key: %w", err)}
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: inject.Handler(f.opts), ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}}
	fmt.Fprintf(log, "granary inject: serving the webhook at https://%s (mounts through %s)\n", ln.Addr(), f.opts.Endpoint)
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(ln, "", "") }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}
