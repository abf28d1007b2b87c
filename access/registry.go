// The access keys a node accepts: its own key (unrestricted), the users
// with their policies, and the anonymous policy. The users are replaced
// whole when their file changes; a request sees one table or the next,
// never a mix.
package access

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
)

// User is an access key, its secret and what it may do.
type User struct {
	AccessKey string
	Secret    string
	Grants    []Grant
}

// Key limits: MinIO's minimums (an access key of 3 characters, a secret
// of 8); at most 128 for an access key (AWS's) and 1,024 for a secret.
const (
	MinAccessKey = 3
	MaxAccessKey = 128
	MinSecret    = 8
	MaxSecret    = 1024
)

// CheckAccessKey checks an access key: its length, and printable ASCII
// without space, ',' or '=' (they would split the Authorization header's
// fields, MinIO reserves them) or '/' (it would split the credential
// scope).
func CheckAccessKey(key string) error {
	if n := len(key); n < MinAccessKey || n > MaxAccessKey {
		return fmt.Errorf("the access key must be %d to %d characters long (it is %d)", MinAccessKey, MaxAccessKey, n)
	}
	if strings.IndexFunc(key, func(r rune) bool { return r <= ' ' || r > '~' || r == ',' || r == '=' || r == '/' }) >= 0 {
		return errors.New("the access key may hold only printable ASCII other than space, ',', '=' and '/'")
	}
	return nil
}

// CheckSecret checks a secret's length.
func CheckSecret(secret string) error {
	if n := len(secret); n < MinSecret || n > MaxSecret {
		return fmt.Errorf("the secret key must be %d to %d characters long (it is %d)", MinSecret, MaxSecret, n)
	}
	return nil
}

// ValidateKeys checks an access key and its secret. Every key pair a
// node accepts passes through it.
func ValidateKeys(accessKey, secret string) error {
	if err := CheckAccessKey(accessKey); err != nil {
		return fmt.Errorf("%q: %w", accessKey, err)
	}
	if err := CheckSecret(secret); err != nil {
		return fmt.Errorf("%q: %w", accessKey, err)
	}
	return nil
}

// entry is one accepted key.
type entry struct {
	secret string
	policy *Policy
}

// table is one generation of accepted keys.
type table struct {
	keys   map[string]entry
	digest string
}

// Registry answers, for an access key, its secret (it is a
// sigv4.Credentials) and its policy. It is safe for concurrent use.
type Registry struct {
	root      string // the node's own access key, never replaced
	anonymous *Policy
	table     atomic.Pointer[table] // replaced whole by SetUsers
}

// NewRegistry returns a registry holding only the node's own key, which
// may do everything, and the anonymous policy (nil: anonymous requests
// may do nothing).
func NewRegistry(rootKey, rootSecret string, anonymous *Policy) *Registry {
	r := &Registry{root: rootKey, anonymous: anonymous}
	if anonymous == nil {
		r.anonymous = NewPolicy(nil)
	}
	keys := map[string]entry{rootKey: {secret: rootSecret, policy: Unrestricted}}
	r.table.Store(&table{keys: keys, digest: digest(nil)})
	return r
}

// SetUsers replaces the users. It refuses (and changes nothing) when a key
// is invalid, given twice, or is the node's own.
func (r *Registry) SetUsers(users []User) error {
	t := make(map[string]entry, len(users)+1)
	t[r.root] = r.table.Load().keys[r.root]
	for _, u := range users {
		if err := ValidateKeys(u.AccessKey, u.Secret); err != nil {
			return err
		}
		if _, dup := t[u.AccessKey]; dup {
			if u.AccessKey == r.root {
				return fmt.Errorf("user %q is the node's own access key", u.AccessKey)
			}
			return fmt.Errorf("user %q is declared twice", u.AccessKey)
		}
		t[u.AccessKey] = entry{secret: u.Secret, policy: NewPolicy(u.Grants)}
	}
	r.table.Store(&table{keys: t, digest: digest(users)})
	return nil
}

// digest names a set of users: their keys, grants and secrets (hashed),
// in key order. Two nodes with the same users show the same digest.
func digest(users []User) string {
	sorted := slices.Clone(users)
	slices.SortFunc(sorted, func(a, b User) int { return strings.Compare(a.AccessKey, b.AccessKey) })
	h := sha256.New()
	for _, u := range sorted {
		sec := sha256.Sum256([]byte(u.Secret))
		fmt.Fprintf(h, "%q %x", u.AccessKey, sec)
		for _, g := range u.Grants {
			fmt.Fprintf(h, " %q", g.String())
		}
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Digest names the current users (see digest); members of a cluster,
// which must accept the same keys, show the same one.
func (r *Registry) Digest() string { return r.table.Load().digest }

// Secret implements sigv4.Credentials.
func (r *Registry) Secret(accessKey string) (string, bool) {
	e, ok := r.table.Load().keys[accessKey]
	return e.secret, ok
}

// Policy returns the policy of accessKey; nil (which allows nothing) if
// the key is unknown, as it is when it was removed since it was checked.
func (r *Registry) Policy(accessKey string) *Policy {
	return r.table.Load().keys[accessKey].policy
}

// Anonymous returns the policy of requests without credentials.
func (r *Registry) Anonymous() *Policy { return r.anonymous }

// Users returns the number of keys besides the node's own.
func (r *Registry) Users() int { return len(r.table.Load().keys) - 1 }
