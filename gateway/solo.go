// A node on its own, as the cluster seam (Peers) sees it when
// Options.Peers is nil: the node is its only member and owns every
// chunk, so the engine's cluster logic (peers.go, owed.go, listshare.go)
// finds no one to ask or to tell, and never checks for a cluster.
package gateway

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/granary-dev/granary/cluster"
	"github.com/granary-dev/granary/cluster/peer"
	"github.com/granary-dev/granary/store"
)

// soloID names the node in its cluster of one; no other member reads it.
const soloID = "solo"

// solo is the cluster of one node: only holds that node.
type solo struct{ only []cluster.Member }

var _ Peers = solo{}

func newSolo() solo { return solo{only: []cluster.Member{{ID: soloID}}} }

func (s solo) Self() cluster.Member                      { return s.only[0] }
func (s solo) Members() []cluster.Member                 { return s.only }
func (s solo) Owners(key []byte, r int) []cluster.Member { return s.only }
func (s solo) Heirs(key []byte) []cluster.Member         { return nil }
func (s solo) Known() []cluster.Member                   { return s.only }
func (s solo) Client() PeerClient                        { return nobody{} }

// errNobody is every answer of nobody.
var errNobody = fmt.Errorf("gateway: no other member: %w", store.ErrUnavailable)

// nobody is the peer client of a node on its own: there is no member to
// call (the engine never calls one that is not listed), so each call fails.
type nobody struct{}

var _ PeerClient = nobody{}

func (nobody) Timeout() time.Duration { return 0 }
func (nobody) GetChunk(context.Context, cluster.Member, peer.ChunkRequest) (io.ReadCloser, error) {
	return nil, errNobody
}
func (nobody) PutChunk(context.Context, cluster.Member, store.ChunkID, int64, []byte) error {
	return errNobody
}
func (nobody) Forget(context.Context, cluster.Member, string, string, *store.ObjectInfo) error {
	return errNobody
}
func (nobody) ForgetAll(context.Context, cluster.Member) error { return errNobody }
func (nobody) Coverage(context.Context, cluster.Member) ([]peer.Cover, error) {
	return nil, errNobody
}
func (nobody) ListCached(context.Context, cluster.Member, string, store.ListOptions) (store.ListPage, error) {
	return store.ListPage{}, errNobody
}
func (nobody) Head(context.Context, cluster.Member, string, string, bool) (store.ObjectInfo, error) {
	return store.ObjectInfo{}, errNobody
}
func (nobody) GetFirst(context.Context, cluster.Member, string, string, int64) (store.ObjectInfo, io.ReadCloser, error) {
	return store.ObjectInfo{}, nil, errNobody
}
func (nobody) HeadStale(context.Context, cluster.Member, string, string) (store.ObjectInfo, error) {
	return store.ObjectInfo{}, errNobody
}
