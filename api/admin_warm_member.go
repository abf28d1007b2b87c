// Another member's warm-up, cancelled through this node:
//
//	DELETE /_granary/warm?id=ID&member=M
//
// (member omitted, or this node's ID: this node's job, admin_warm.go).
// This node authorizes the caller as it would for a job of its own,
// against the job's bucket and prefix as M's status reports them, then
// asks M to cancel the job over the peer protocol; the answer is the
// job's status after the cancel, as M wrote it.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/granary-dev/granary/access"
	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/cluster"
	"github.com/granary-dev/granary/cluster/peer"
	"github.com/granary-dev/granary/ops"
	"github.com/granary-dev/granary/store"
)

// memberParam names the member whose warm-up a call acts on.
const memberParam = "member"

// warmMember is the member a warm-up call names, if it names another
// than this node (ok false: the call is this node's).
func (a *Admin) warmMember(c *fiber.Ctx) (m cluster.Member, ok bool, err error) {
	id := string(c.Request().URI().QueryArgs().Peek(memberParam))
	if id == "" || id == a.opts.Self.ID {
		return m, false, nil
	}
	if a.opts.Node != nil && a.opts.Client != nil {
		for _, m := range a.opts.Node.Known() {
			if m.ID == id {
				return m, true, nil
			}
		}
	}
	return m, false, s3err.New(s3err.InvalidArgument, "member: no cluster member "+id)
}

// cancelMemberWarm cancels job id of member m for the caller of r.
// A job's ID names one job of m for as long as m runs, so the bucket
// read from m's status is the bucket of the job m cancels.
func (a *Admin) cancelMemberWarm(c *fiber.Ctx, r *request, m cluster.Member, id string) error {
	st, err := a.memberWarm(r.ctx, m, id)
	if err != nil {
		return err
	}
	r.bucket = st.Spec.Bucket
	if !r.policy.Prefix(access.Admin, st.Spec.Bucket, st.Spec.Prefix) {
		return errAccessDenied()
	}
	var after json.RawMessage
	if err := a.opts.Client.CancelWarm(r.ctx, m, id, &after); err != nil {
		return memberWarmError(m, id, err)
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(after)
}

// memberWarm is job id as member m's status reports it (m answers for
// the cluster, every job).
func (a *Admin) memberWarm(ctx context.Context, m cluster.Member, id string) (ops.WarmStatus, error) {
	raw, err := a.opts.Client.Status(ctx, m, nil)
	if err != nil {
		return ops.WarmStatus{}, memberWarmError(m, id, err)
	}
	var st ops.Status
	if err := json.Unmarshal(raw, &st); err != nil {
		return ops.WarmStatus{}, fmt.Errorf("member %s's status: %w", m.ID, err)
	}
	for _, w := range st.Warm {
		if w.ID == id {
			return w, nil
		}
	}
	return ops.WarmStatus{}, noSuchWarm(id)
}

// memberWarmError is what a failed call to member m about job id
// answers: the job missing there, else m unavailable.
func memberWarmError(m cluster.Member, id string, err error) error {
	if errors.Is(err, peer.ErrNoSuchWarm) {
		return noSuchWarm(id)
	}
	return fmt.Errorf("%w: member %s: %v", store.ErrUnavailable, m.ID, err)
}

// peerCancelWarm answers a verified member's cancel call: the caller it
// acts for was authorized on that member.
func (a *Admin) peerCancelWarm(id string) (any, error) {
	if !a.ops.CancelWarm(id) {
		return nil, fmt.Errorf("%w: %q", peer.ErrNoSuchWarm, id)
	}
	st, ok := a.ops.WarmStatus(id)
	if !ok {
		return nil, fmt.Errorf("%w: %q", peer.ErrNoSuchWarm, id)
	}
	return st, nil
}
