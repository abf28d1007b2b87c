// The opt-in profiler: --pprof-listen serves net/http/pprof on its own
// listener, apart from the S3 port, so profiling a node under load needs
// no credentials and exposes nothing unless an operator asks for it.
package main

import (
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/rs/zerolog"
)

// startPprof serves the profiler on addr until the returned stop is
// called. An empty addr serves nothing.
func startPprof(addr string, log zerolog.Logger) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn().Err(err).Msg("pprof server stopped")
		}
	}()
	log.Info().Str("addr", ln.Addr().String()).Msg("profiler serving /debug/pprof/")
	return func() { srv.Close() }, nil
}
