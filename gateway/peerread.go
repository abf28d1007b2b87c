// Reading a chunk from its owners: each owner in turn, then the origin,
// resuming where the last source stopped, so an owner that dies in the
// middle of a chunk costs a reconnect, not the read.
package gateway

import (
	"context"
	"errors"
	"io"

	"github.com/granary-dev/granary/cluster"
	"github.com/granary-dev/granary/cluster/peer"
	"github.com/granary-dev/granary/store"
)

// source is a member to read a chunk from.
type source struct {
	m cluster.Member
	// cached asks for what m holds only, never a fill (a hand-off from
	// the chunk's former owner).
	cached bool
}

// owners are members to ask as owners.
func owners(ms []cluster.Member) []source {
	out := make([]source, len(ms))
	for i, m := range ms {
		out[i] = source{m: m}
	}
	return out
}

// failover reads chunk id (n bytes) from the members in ask, in order,
// then from the origin. Invariant: got bytes were delivered; the next
// source is opened at offset got. Only the origin's failure is the read's.
type failover struct {
	e    *Engine
	ctx  context.Context
	id   store.ChunkID
	n    int64
	ask  []source
	next int // index in ask of the next source; len(ask) is the origin
	got  int64
	cur  io.ReadCloser
	last bool // cur is the origin
}

func (e *Engine) peerBody(id store.ChunkID, n int64, ask []source) io.ReadCloser {
	return &failover{e: e, ctx: context.Background(), id: id, n: n, ask: ask}
}

func (r *failover) Read(p []byte) (int, error) {
	for {
		if r.cur == nil {
			if err := r.open(); err != nil {
				return 0, err
			}
		}
		m, err := r.cur.Read(p)
		r.got += int64(m)
		if err == nil || r.last || (err == io.EOF && r.got == r.n) {
			return m, err
		}
		r.sourceFailed(err)
		if m > 0 {
			return m, nil
		}
	}
}

// sourceFailed drops the current peer source after a read error.
func (r *failover) sourceFailed(err error) {
	r.cur.Close()
	r.cur = nil
	peer := r.ask[r.next-1].m
	r.e.m.peerErrors.WithLabelValues("get").Inc()
	r.e.log.Warn().Err(err).Str("peer", peer.ID).Str("bucket", r.id.Bucket).Str("key", r.id.Key).
		Int64("chunk", r.id.Index).Int64("at", r.got).Msg("owner failed mid-chunk; reading on from the next source")
}

// open opens the next source at offset got: the next owner that answers
// (each bounded by the peer timeout, and its body by a stall watch of the
// same length), else the origin.
func (r *failover) open() error {
	timeout := r.e.peer.peers.Client().Timeout()
	for r.next < len(r.ask) {
		src := r.ask[r.next]
		m := src.m
		r.next++
		ctx, watch, cancel := watchStalls(r.ctx, timeout)
		req := peer.ChunkRequest{ID: r.id, Len: r.n, Chunk: r.e.opts.ChunkSize, Off: r.got, CachedOnly: src.cached}
		rc, err := r.e.peer.peers.Client().GetChunk(ctx, m, req)
		if err == nil {
			r.cur = watch(rc)
			r.e.m.peerReads.Inc()
			return nil
		}
		cancel()
		if src.cached && errors.Is(err, store.ErrNotFound) {
			continue // the former owner does not have it either
		}
		r.e.m.peerErrors.WithLabelValues("get").Inc()
		r.e.log.Warn().Err(err).Str("peer", m.ID).Str("bucket", r.id.Bucket).Str("key", r.id.Key).
			Int64("chunk", r.id.Index).Msg("owner did not serve a chunk; trying the next source")
	}
	if r.last {
		return errors.New("gateway: chunk sources exhausted")
	}
	r.last = true
	ctx, watch, cancel := watchStalls(r.ctx, r.e.opts.FetchTimeout)
	off := r.id.Index*r.e.opts.ChunkSize + r.got
	rc, _, err := r.e.origin.Get(ctx, r.id.Bucket, r.id.Key, store.ReadRange{Offset: off, Length: r.n - r.got, ETag: r.id.ETag})
	if err != nil {
		cancel()
		return err
	}
	r.cur = watch(rc)
	return nil
}

func (r *failover) Close() error {
	if r.cur != nil {
		return r.cur.Close()
	}
	return nil
}
