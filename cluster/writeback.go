// The primary's side of write-back replication: before a write-back
// object is acknowledged, a copy goes to another member; once the object
// is at the origin, the copies are dropped.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/granary-dev/granary/store"
)

// objectKey is the ring key of a whole object (where its write-back copy
// goes).
func objectKey(bucket, key string) []byte {
	return append(append([]byte(bucket), 0), key...)
}

// Staged (the write-back log's observer hook, see store.StageObserver)
// gives one other member a durable copy of a write-back object this node
// is about to acknowledge; open reads the object's bytes from the start. The members are tried in ring order for the object; the
// first that takes the copy ends it. With no other member it returns nil
// (the write is kept once: a cluster of one node). When every other member
// fails, it fails: the write must not be acknowledged.
func (n *Node) Staged(ctx context.Context, info store.ObjectInfo, open func() (io.ReadCloser, error)) error {
	owners := n.Owners(objectKey(info.Bucket, info.Key), len(n.Members()))
	var errs []error
	for _, m := range owners {
		if m.ID == n.opts.Self.ID {
			continue
		}
		err := n.replicateTo(ctx, m, info, open)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("cluster: no member took a copy of %s/%s: %w", info.Bucket, info.Key, errors.Join(errs...))
}

func (n *Node) replicateTo(ctx context.Context, m Member, info store.ObjectInfo, open func() (io.ReadCloser, error)) error {
	body, err := open()
	if err != nil {
		return err
	}
	defer body.Close()
	return n.opts.Client.PutReplica(ctx, m, info, body)
}

// Persisted (the write-back log's observer hook) tells every other
// member that info's version is at the origin, so whoever holds its copy
// drops it. Best effort, in the background: a copy left behind is dropped
// at takeover (the origin has that version).
func (n *Node) Persisted(info store.ObjectInfo, _ string) {
	for _, m := range n.Members() {
		if m.ID == n.opts.Self.ID {
			continue
		}
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			err := n.opts.Client.DropReplica(context.Background(), m, info.Bucket, info.Key, info.ETag)
			if err != nil {
				n.log.Debug().Err(err).Str("peer", m.ID).Str("bucket", info.Bucket).Str("key", info.Key).Msg("dropping a write-back copy")
			}
		}()
	}
}
