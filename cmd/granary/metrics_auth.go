// --metrics-auth: /metrics open, or behind a bearer token kept in a file
// that is read again when it changes (a Kubernetes secret updated in
// place, a rotation renamed over the old file).
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/rs/zerolog"
)

// metricsAuthOpen is the default --metrics-auth: no token.
const metricsAuthOpen = "open"

// metricsTokenFile parses --metrics-auth: "" for open, else the token
// file of "bearer:FILE".
func metricsTokenFile(v string) (string, error) {
	if v == metricsAuthOpen {
		return "", nil
	}
	if file, ok := strings.CutPrefix(v, "bearer:"); ok && file != "" {
		return file, nil
	}
	return "", fmt.Errorf("metrics-auth: %q is neither open nor bearer:FILE", v)
}

// tokenFile serves the token in path, read again when the file changed
// since the last read. A file that cannot be read, or holds no token,
// leaves the last good token in service (a rotation half done must not
// lock the scraper out, nor let anyone in).
type tokenFile struct {
	path  string
	log   zerolog.Logger
	mu    sync.Mutex // guards token and seen
	token []byte
	seen  fileStamp
}

// loadTokenFile reads the token once, failing if there is none.
func loadTokenFile(path string, log zerolog.Logger) (*tokenFile, error) {
	f := &tokenFile{path: path, log: log}
	if err := f.reload(); err != nil {
		return nil, err
	}
	return f, nil
}

// reload reads the token if the file changed; mu must not be held.
func (f *tokenFile) reload() error {
	st, err := stampOf(f.path)
	if err != nil {
		return fmt.Errorf("metrics-auth: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.token != nil && f.seen == st {
		return nil
	}
	b, err := os.ReadFile(f.path)
	if err != nil {
		return fmt.Errorf("metrics-auth: %w", err)
	}
	token := bytes.TrimSpace(b)
	if len(token) == 0 {
		return errors.New("metrics-auth: " + f.path + " holds no token")
	}
	f.token, f.seen = token, st
	return nil
}

// Token is api.MonitorOptions.MetricsToken: the current token. The file is
// looked at once per scrape (a stat; read only when it changed).
func (f *tokenFile) Token() []byte {
	if err := f.reload(); err != nil {
		f.log.Warn().Err(err).Msg("metrics token not reloaded; the previous one stays")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.token
}

// metricsToken is the node's api.MonitorOptions.MetricsToken: nil when /metrics
// is open.
func metricsToken(cfg Config, log zerolog.Logger) (func() []byte, error) {
	file, err := metricsTokenFile(cfg.MetricsAuth)
	if err != nil || file == "" {
		return nil, err
	}
	f, err := loadTokenFile(file, log)
	if err != nil {
		return nil, err
	}
	return f.Token, nil
}
