// Warm-ups across the cluster: a member asks another to cancel one of its
// warm-up jobs (RouteWarm). The asker authorized its own caller first,
// against the job's bucket and prefix as the member's status reports
// them; the member trusts a signed call as it trusts a status call.
package peer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/granary-dev/granary/cluster"
)

// RouteWarm is DELETE warm?id=ID: cancel the member's warm-up job ID.
const RouteWarm = Prefix + "warm"

// ErrNoSuchWarm is a member's answer for a warm-up job it does not have.
var ErrNoSuchWarm = errors.New("peer: no such warm-up job")

// maxWarmAnswer bounds a job's status document.
const maxWarmAnswer = 1 << 20

// CancelWarm asks member to to cancel its warm-up job id, and decodes the
// job's status after the cancel into out. A job the member does not have
// is an error matching ErrNoSuchWarm.
func (c *Client) CancelWarm(ctx context.Context, to cluster.Member, id string, out any) error {
	return c.doJSON(ctx, http.MethodDelete, to, RouteWarm, url.Values{"id": {id}}, maxWarmAnswer, out)
}

// cancelWarm answers RouteWarm.
func (h *Handler) cancelWarm(k *call) error {
	if h.o.CancelWarm == nil {
		return fmt.Errorf("%w: this node runs no warm-ups", ErrNotSupported)
	}
	id := k.get("id")
	if id == "" {
		return fmt.Errorf("%w: no warm-up id", ErrBadRequest)
	}
	st, err := h.o.CancelWarm(id)
	if err != nil {
		return err
	}
	return k.c.JSON(st)
}
