// Listings shared between members: each node's catalog answers LIST under
// the prefixes warmed through it, and members ask one another which
// prefixes those are (RouteCoverage) and for pages under them
// (RouteList), answered from the catalog only, never from the origin.
package peer

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/granary-dev/granary/cluster"
	"github.com/granary-dev/granary/store"
)

// Routes of shared listings, under Prefix.
const (
	RouteCoverage = Prefix + "coverage"
	RouteList     = Prefix + "list"
)

// maxListAnswer bounds a page's answer (1,000 keys of 1 KiB names, with
// their info).
const maxListAnswer = 8 << 20

// Cover is a prefix a member's catalog lists, and when its listing was
// taken from the origin.
type Cover struct {
	Bucket string    `json:"bucket"`
	Prefix string    `json:"prefix"`
	At     time.Time `json:"at"`
}

// Lister is a Backend's catalog as members see it (optional: a Backend
// without one answers neither call).
type Lister interface {
	// Coverage returns the prefixes the catalog lists.
	Coverage() ([]Cover, error)
	// ListCached returns a page from the catalog alone, if it lists the
	// prefix and the bucket's freshness trusts it, else store.ErrNotFound.
	ListCached(ctx context.Context, bucket string, opts store.ListOptions) (store.ListPage, error)
}

// Coverage asks member to which prefixes its catalog lists.
func (c *Client) Coverage(ctx context.Context, to cluster.Member) ([]Cover, error) {
	var out []Cover
	err := c.getJSON(ctx, to, RouteCoverage, nil, maxListAnswer, &out)
	return out, err
}

// ListCached asks member to for a page of bucket from its catalog
// (store.ErrNotFound when it does not list it).
func (c *Client) ListCached(ctx context.Context, to cluster.Member, bucket string, opts store.ListOptions) (store.ListPage, error) {
	q := url.Values{"bucket": {bucket}, "prefix": {opts.Prefix}, "delimiter": {opts.Delimiter},
		"after": {opts.After}, "max": {strconv.Itoa(opts.MaxKeys)}}
	var page store.ListPage
	err := c.getJSON(ctx, to, RouteList, q, maxListAnswer, &page)
	return page, err
}

// coverage answers RouteCoverage.
func (h *Handler) coverage(k *call) error {
	l, ok := h.o.Backend.(Lister)
	if !ok {
		return k.c.JSON([]Cover{})
	}
	covers, err := l.Coverage()
	if err != nil {
		return err
	}
	return k.c.JSON(covers)
}

// list answers RouteList.
func (h *Handler) list(k *call) error {
	if err := h.o.CheckName(k.bucket, ""); err != nil {
		return fmt.Errorf("%w: bad bucket name", ErrBadRequest)
	}
	l, ok := h.o.Backend.(Lister)
	if !ok {
		return store.ErrNotFound
	}
	max, err := strconv.Atoi(k.get("max"))
	if err != nil || max < 1 || max > 1000 {
		return fmt.Errorf("%w: max %q", ErrBadRequest, k.get("max"))
	}
	opts := store.ListOptions{Prefix: k.get("prefix"), Delimiter: k.get("delimiter"), After: k.get("after"), MaxKeys: max}
	page, err := l.ListCached(h.o.Context, k.bucket, opts)
	if err != nil {
		return err
	}
	return k.c.JSON(page)
}
