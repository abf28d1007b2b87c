// The node's access registry: its own key (unrestricted), the users of the
// users file (read again when it changes) and of the configuration file,
// and the anonymous grants. Every member of a cluster must be given the
// same users file, key file and configuration (a Kubernetes Secret mounted
// on each); `granary status` warns when members disagree.
package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/access"
)

// usersPoll is how often a node looks at the users file for changes.
const usersPoll = 2 * time.Second

// usersPaths returns the users file and its key file.
func (c Config) usersPaths() (file, key string) {
	file, key = c.UsersFile, c.UsersKeyFile
	if file == "" {
		file = filepath.Join(c.DataDir, "users.json")
	}
	if key == "" {
		key = filepath.Join(c.DataDir, "users.key")
	}
	return file, key
}

// checkAccess validates the declared users and the anonymous grants.
func (c Config) checkAccess() error {
	for _, u := range c.Users {
		if u.Name == "" || (u.SecretFile == "") == (u.SecretEnv == "") {
			return fmt.Errorf("users: user %q: give a name and one of secret-file or secret-env", u.Name)
		}
		if _, err := parseGrants(u.Allow); err != nil {
			return fmt.Errorf("users: user %q: %w", u.Name, err)
		}
	}
	grants, err := parseGrants(c.Anonymous)
	if err != nil {
		return fmt.Errorf("anonymous: %w", err)
	}
	for _, g := range grants {
		if g.Actions&^(access.Read|access.List) != 0 {
			return fmt.Errorf("anonymous: %s: requests without credentials may only read and list", g)
		}
	}
	return nil
}

func parseGrants(specs []string) ([]access.Grant, error) {
	var out []access.Grant
	for _, s := range specs {
		g, err := access.ParseGrant(s)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// AnonymousPolicy is what requests without credentials may do: the
// anonymous grants, and reading the objects of each bucket set
// anonymous-read.
func (c Config) AnonymousPolicy() *access.Policy {
	grants, _ := parseGrants(c.Anonymous) // checked by Normalize
	for name, b := range c.Buckets {
		if b.AnonymousRead {
			grants = append(grants, access.Grant{Bucket: name, Actions: access.Read})
		}
	}
	return access.NewPolicy(grants)
}

// declaredUsers returns the configuration file's users with their secrets.
func (c Config) declaredUsers(getenv Getenv) ([]access.User, error) {
	users := make([]access.User, 0, len(c.Users))
	for _, u := range c.Users {
		secret, err := "", error(nil)
		if u.SecretFile != "" {
			secret, err = readSecretFile(u.SecretFile)
		} else if v, ok := getenv(u.SecretEnv); ok {
			secret = v
		}
		if err != nil || secret == "" {
			return nil, fmt.Errorf("users: user %q: no secret in %s%s (%v)", u.Name, u.SecretFile, u.SecretEnv, err)
		}
		grants, _ := parseGrants(u.Allow) // checked by Normalize
		users = append(users, access.User{AccessKey: u.Name, Secret: secret, Grants: grants})
	}
	return users, nil
}

// usersWatch keeps a registry's users those of the configuration plus
// those of the users file, loading the file again when it or its key
// file changes. A file that does not load leaves the last good users.
type usersWatch struct {
	reg      *access.Registry
	declared []access.User
	file     string
	key      string
	log      zerolog.Logger
	seen     [2]fileStamp // the files' stamps at the last load
	loaded   bool
	cancel   context.CancelFunc
	done     sync.WaitGroup
}

// openAccess builds the node's registry (creds were checked by
// LoadCredentials) and starts watching the users file. It fails if the
// users do not load at start.
func openAccess(cfg Config, creds Credentials, getenv Getenv, log zerolog.Logger) (*access.Registry, *usersWatch, error) {
	declared, err := cfg.declaredUsers(getenv)
	if err != nil {
		return nil, nil, usageError{err}
	}
	file, key := cfg.usersPaths()
	w := &usersWatch{
		reg:      access.NewRegistry(creds.AccessKey, creds.SecretKey, cfg.AnonymousPolicy()),
		declared: declared, file: file, key: key,
		log: log.With().Str("component", "users").Logger(),
	}
	if err := w.load(); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	w.done.Add(1)
	go w.run(ctx)
	return w.reg, w, nil
}

// load reads the users file if it changed since the last load and
// installs its users.
func (w *usersWatch) load() error {
	var now [2]fileStamp
	for i, p := range []string{w.file, w.key} {
		now[i], _ = stampOf(p) // a missing file is the zero stamp
	}
	if w.loaded && now == w.seen {
		return nil
	}
	users, err := access.LoadUsers(w.file, w.key)
	if err == nil {
		err = w.reg.SetUsers(append(append([]access.User(nil), w.declared...), users...))
	}
	if err != nil {
		return fmt.Errorf("users file %s: %w", w.file, err)
	}
	w.seen, w.loaded = now, true
	w.log.Info().Str("file", w.file).Int("users", w.reg.Users()).Str("digest", w.reg.Digest()).Msg("users loaded")
	return nil
}

func (w *usersWatch) run(ctx context.Context) {
	defer w.done.Done()
	t := time.NewTicker(usersPoll)
	defer t.Stop()
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		msg := ""
		if err := w.load(); err != nil {
			msg = err.Error()
			if msg != lastErr { // once per distinct failure
				w.log.Error().Err(err).Msg("users file not loaded; the last good users stay in force")
			}
		}
		lastErr = msg
	}
}

// Close stops watching.
func (w *usersWatch) Close() error {
	w.cancel()
	w.done.Wait()
	return nil
}
