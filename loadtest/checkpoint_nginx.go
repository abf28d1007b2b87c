// The checkpoint scenario's nginx rows: the reference cache in front of
// the same slow link. The save goes through nginx, which passes the
// signed PUTs to the origin and caches no writes; the restore right after
// the save is then a miss (read anonymously from the public-read bucket,
// filling nginx's cache on the way), and a second restore is a hit, as
// is a third in ranged GETs.
package main

import (
	"context"
	"fmt"

	"github.com/granary-dev/granary/internal/miniotest"
)

// The nginx rows' targets.
const (
	targetNginxSave   = "nginx (passes the save to the origin)"
	targetNginxNow    = "nginx, restore started when the save returned (cache empty)"
	targetNginxSecond = "nginx, second restore (cache)"
)

// nginx starts nginx in front of the slow link, saves the checkpoint
// through it, restores it twice and stops it.
func (r *ckptRun) nginx(ctx context.Context, mio *miniotest.Server) error {
	p := r.ck.plan
	n, err := startNginx(nginxOptions{upstream: r.proxy.Addr(), objects: p.shards, bytes: p.total()})
	if err != nil {
		return err
	}
	defer n.stop()
	r.cache = childrenOf(n.cmd.Process.Pid)
	defer func() { r.cache = nil }()
	signed, err := newCkptClient(n.addr, mio.AccessKey, mio.SecretKey)
	if err != nil {
		return err
	}
	anon, err := newCkptClient(n.addr, "", "")
	if err != nil {
		return err
	}
	if _, err := r.save(ctx, signed, "save", targetNginxSave, bucketNginx); err != nil {
		return fmt.Errorf("%w\nnginx log tail:\n%s", err, n.tail())
	}
	for _, target := range []string{targetNginxNow, targetNginxSecond} {
		if err := r.restore(ctx, anon, target, bucketNginx); err != nil {
			return fmt.Errorf("%w\nnginx log tail:\n%s", err, n.tail())
		}
	}
	if err := r.restoreRanged(ctx, anon, targetNginxSecond, bucketNginx); err != nil {
		return fmt.Errorf("%w\nnginx log tail:\n%s", err, n.tail())
	}
	return nil
}
