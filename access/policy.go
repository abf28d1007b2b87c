// Package access decides what a caller may do: the actions a grant allows
// on a bucket and a key prefix, the policy of each access key (the node's
// own key may do everything), and the anonymous policy for public data.
// It knows nothing of HTTP: the api maps each S3 operation to an Action
// and asks.
package access

import (
	"errors"
	"fmt"
	"strings"
)

// Action is a set of things a grant allows.
type Action uint8

// The actions. Read is GET and HEAD of objects (and a copy's source);
// List is listing keys and uploads; Write is PUT, copy, multipart and
// creating the bucket; Delete is deleting objects and the bucket; Admin
// is the node's admin API (warm, pin, flush, status).
const (
	Read Action = 1 << iota
	List
	Write
	Delete
	Admin

	All = Read | List | Write | Delete | Admin
)

// actionNames are the names of the actions in grants, in Action bit order.
var actionNames = [...]string{"read", "list", "write", "delete", "admin"}

// String returns the actions as a grant writes them: "read,list".
func (a Action) String() string {
	if a == All {
		return "all"
	}
	var names []string
	for i, n := range actionNames {
		if a&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	return strings.Join(names, ",")
}

// ParseActions reads "read,list", or "all".
func ParseActions(s string) (Action, error) {
	var a Action
	for _, name := range strings.Split(s, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "all" {
			a |= All
			continue
		}
		found := false
		for i, n := range actionNames {
			if name == n {
				a |= 1 << i
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("unknown action %q (want read, list, write, delete, admin or all)", name)
		}
	}
	return a, nil
}

// AnyBucket in a grant's Bucket matches every bucket.
const AnyBucket = "*"

// Grant allows Actions on the keys of Bucket that start with Prefix.
type Grant struct {
	Bucket  string
	Prefix  string
	Actions Action
}

// ErrBadGrant is returned by ParseGrant.
var ErrBadGrant = errors.New("a grant is ACTIONS:BUCKET[/PREFIX], as in read,list:datasets/imagenet/ or all:*")

// ParseGrant reads "ACTIONS:BUCKET[/PREFIX]": "read,list:datasets/imagenet/",
// "write:checkpoints", "all:*".
func ParseGrant(s string) (Grant, error) {
	acts, target, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok || target == "" {
		return Grant{}, ErrBadGrant
	}
	a, err := ParseActions(acts)
	if err != nil {
		return Grant{}, fmt.Errorf("grant %q: %w", s, err)
	}
	bucket, prefix, _ := strings.Cut(target, "/")
	if bucket == "" || (bucket == AnyBucket && prefix != "") {
		return Grant{}, fmt.Errorf("grant %q: %w", s, ErrBadGrant)
	}
	return Grant{Bucket: bucket, Prefix: prefix, Actions: a}, nil
}

// String writes g as ParseGrant reads it.
func (g Grant) String() string {
	target := g.Bucket
	if g.Prefix != "" {
		target += "/" + g.Prefix
	}
	return g.Actions.String() + ":" + target
}

func (g Grant) coversBucket(bucket string) bool {
	return g.Bucket == AnyBucket || g.Bucket == bucket
}

// Policy is what one caller may do: the union of its grants, or
// everything (Unrestricted, the node's own key). A nil *Policy allows
// nothing, so a caller whose policy was not found is refused.
type Policy struct {
	all    bool
	grants []Grant
}

// Unrestricted is the policy of the node's own key.
var Unrestricted = &Policy{all: true}

// NewPolicy returns the policy of grants.
func NewPolicy(grants []Grant) *Policy {
	return &Policy{grants: append([]Grant(nil), grants...)}
}

// Grants returns a copy of p's grants (nil for Unrestricted).
func (p *Policy) Grants() []Grant {
	if p == nil {
		return nil
	}
	return append([]Grant(nil), p.grants...)
}

// Object reports whether p allows a on the object bucket/key.
func (p *Policy) Object(a Action, bucket, key string) bool {
	if p == nil {
		return false
	}
	if p.all {
		return true
	}
	for _, g := range p.grants {
		if g.Actions&a == a && g.coversBucket(bucket) && strings.HasPrefix(key, g.Prefix) {
			return true
		}
	}
	return false
}

// Prefix reports whether p allows a on every key of bucket under prefix:
// a listing of prefix, or an admin call on it. A grant on a longer prefix
// does not allow a listing of a shorter one, which would show keys outside
// the grant (AWS's s3:prefix condition works the same way).
func (p *Policy) Prefix(a Action, bucket, prefix string) bool {
	return p.Object(a, bucket, prefix)
}

// Bucket reports whether p allows a on the whole of bucket (creating or
// deleting it): a grant on the bucket with no prefix.
func (p *Policy) Bucket(a Action, bucket string) bool {
	return p.Prefix(a, bucket, "")
}

// Node reports whether p allows a on every bucket: node-wide admin calls.
func (p *Policy) Node(a Action) bool {
	if p == nil {
		return false
	}
	if p.all {
		return true
	}
	for _, g := range p.grants {
		if g.Actions&a == a && g.Bucket == AnyBucket {
			return true
		}
	}
	return false
}

// Sees reports whether p grants anything in bucket: it may learn the
// bucket exists (ListBuckets, HeadBucket, GetBucketLocation).
func (p *Policy) Sees(bucket string) bool {
	if p == nil {
		return false
	}
	if p.all {
		return true
	}
	for _, g := range p.grants {
		if g.Actions != 0 && g.coversBucket(bucket) {
			return true
		}
	}
	return false
}

// Empty reports whether p allows nothing at all.
func (p *Policy) Empty() bool {
	if p == nil {
		return true
	}
	if p.all {
		return false
	}
	for _, g := range p.grants {
		if g.Actions != 0 {
			return false
		}
	}
	return true
}
