// The object browser's calls through the signed admin API (the
// console's Objects panel):
//
//	GET  /_granary/objects?bucket=B[&prefix=P][&delimiter=D][&after=K][&max-keys=N]
//	POST /_granary/evict?bucket=B&key=K
//
// objects answers one page of the bucket's listing (as S3 would list it:
// from the catalog, the listing cache or the origin) with, for each
// object, what this node's tiers hold of its current version: an
// ObjectsPage. A cluster member answers a ClusterStatus whose documents
// are each member's ObjectsPage, asked over the peer status call with
// view=objects; each member lists the page itself (shared listings make
// that cheap), and the console shows the first member's listing with
// every member's figures.
//
// evict drops every cached chunk and the metadata of bucket/key on this
// node and every member (as a change at the origin would); the next read
// fetches it again. An object whose write-back upload is still pending
// here is refused: its cached copy is what the upload serves until then.
package api

import (
	"encoding/json"
	"net/url"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/granary-dev/granary/access"
	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/store"
)

const (
	objectsRoute = "/_granary/objects"
	evictRoute   = "/_granary/evict"
	// viewParam=viewObjects marks a peer status call as an objects call.
	viewParam   = "view"
	viewObjects = "objects"
	// defaultBrowseKeys is a page's size when max-keys is not given;
	// pages are at most maxListKeys.
	defaultBrowseKeys = 100
)

// ObjectsPage is one page of a bucket's listing as one node holds it.
type ObjectsPage struct {
	Bucket    string `json:"bucket"`
	Prefix    string `json:"prefix"`
	Delimiter string `json:"delimiter,omitempty"`
	// Prefixes are the common prefixes (folders) of the page.
	Prefixes []string      `json:"prefixes"`
	Objects  []ObjectEntry `json:"objects"`
	// Truncated says more follow; pass NextAfter as after for them.
	Truncated bool   `json:"truncated"`
	NextAfter string `json:"nextAfter,omitempty"`
}

// ObjectEntry is one listed object and what this node holds of it: per
// tier, and the most of any tier (what it serves without asking).
type ObjectEntry struct {
	Key          string           `json:"key"`
	Size         int64            `json:"size"`
	ETag         string           `json:"etag"`
	LastModified time.Time        `json:"lastModified,omitzero"`
	Held         int64            `json:"heldBytes"`
	HeldByTier   map[string]int64 `json:"heldByTier"`
}

// objectsQuery reads an objects call's listing parameters; the names are
// those a member is asked with.
func objectsQuery(c *fiber.Ctx) (url.Values, store.ListOptions, error) {
	args := c.Request().URI().QueryArgs()
	q := url.Values{viewParam: {viewObjects}}
	for _, k := range []string{"bucket", "prefix", "delimiter", "after", "max-keys"} {
		if v := args.Peek(k); len(v) > 0 {
			q.Set(k, string(v))
		}
	}
	opts := store.ListOptions{Prefix: q.Get("prefix"), Delimiter: q.Get("delimiter"), After: q.Get("after"), MaxKeys: defaultBrowseKeys}
	if err := checkBucket(q.Get("bucket")); err != nil {
		return q, opts, err
	}
	if v := q.Get("max-keys"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return q, opts, s3err.New(s3err.InvalidArgument, "max-keys: want a number from 1 to "+strconv.Itoa(maxListKeys))
		}
		opts.MaxKeys = min(n, maxListKeys)
	}
	return q, opts, nil
}

// objects answers an authenticated objects call (authorizeAdmin checked
// the bucket and prefix): this node's page, or every member's.
func (a *Admin) objects(c *fiber.Ctx, r *request) error {
	q, _, err := objectsQuery(c)
	r.bucket = q.Get("bucket")
	if err != nil {
		return err
	}
	if a.opts.Node == nil || a.opts.Client == nil {
		return a.nodeObjects(c, r)
	}
	// Every member lists the prefix the caller was authorized for, and
	// nothing else: the pages pass as the members wrote them.
	return c.JSON(a.askMembers(r, q, passAll))
}

// passAll is a filter of askMembers that passes every document.
func passAll(st json.RawMessage, _ *access.Policy) (json.RawMessage, error) { return st, nil }

// nodeObjects answers this node's ObjectsPage.
func (a *Admin) nodeObjects(c *fiber.Ctx, r *request) error {
	q, opts, err := objectsQuery(c)
	r.bucket = q.Get("bucket")
	if err != nil {
		return err
	}
	page, err := a.engine.List(r.ctx, r.bucket, opts)
	if err != nil {
		return err
	}
	out := ObjectsPage{Bucket: r.bucket, Prefix: opts.Prefix, Delimiter: opts.Delimiter,
		Prefixes: page.CommonPrefixes, Objects: make([]ObjectEntry, 0, len(page.Objects)),
		Truncated: page.IsTruncated, NextAfter: page.NextAfter}
	if out.Prefixes == nil {
		out.Prefixes = []string{}
	}
	for _, o := range page.Objects {
		held, byTier := a.ops.Held(r.bucket, o.Key, o.ETag)
		out.Objects = append(out.Objects, ObjectEntry{Key: o.Key, Size: o.Size, ETag: o.ETag,
			LastModified: o.LastModified, Held: held, HeldByTier: byTier})
	}
	return c.JSON(out)
}

// evict answers an authenticated evict call (authorizeAdmin checked the
// object).
func (a *Admin) evict(c *fiber.Ctx, r *request) error {
	args := c.Request().URI().QueryArgs()
	r.bucket, r.key = string(args.Peek("bucket")), string(args.Peek("key"))
	if err := checkBucket(r.bucket); err != nil {
		return err
	}
	if err := checkKey(r.key); err != nil {
		return err
	}
	if !a.engine.Persisted(r.bucket, r.key) {
		return s3err.New(s3err.InvalidRequest, "s3://"+r.bucket+"/"+r.key+" is not at the origin yet (write-back pending): flush it first")
	}
	a.engine.Invalidate(r.ctx, r.bucket, r.key)
	return c.JSON(map[string]any{"bucket": r.bucket, "key": r.key, "evicted": true})
}
