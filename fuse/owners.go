// Reading each chunk from the member that owns it. In a cluster the mount
// learns the ring from its node (GET /_granary/ring: the live members and
// the chunk size) and sends each chunk's ranged GET to the chunk's owner,
// as the nodes place it (internal/ring over the members'
// IDs): one hop per read, whichever node the mount was pointed at. A
// member that does not answer is skipped for ownerBackoff and its chunks
// are read through the node, as is everything while the ring is unknown
// (an endpoint that is not a Granary cluster: MinIO, one node). The view
// is asked again every ringRefresh, so members that come and go are
// followed; a chunk read through a member that no longer owns it is still
// served right (any node serves any chunk), at the cost of a hop.
package fuse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/signer"

	"github.com/granary-dev/granary/internal/ring"
)

const (
	// ringRefresh is how old the ring may get before a read asks the
	// node again (in the background: reads go on with the old one).
	ringRefresh = 15 * time.Second
	// ownerBackoff is how long a member that failed a read is skipped
	// at first; maxOwnerBackoff at most.
	ownerBackoff    = 10 * time.Second
	maxOwnerBackoff = 5 * time.Minute
	// ringPath is the node's ring call (api.RingAnswer).
	ringPath = "/_granary/ring"
)

// ringAnswer is the part of the node's ring answer the mount reads.
type ringAnswer struct {
	Self    string `json:"self"`
	Members []struct {
		ID   string `json:"id"`
		Addr string `json:"addr"`
	} `json:"members"`
	ChunkSize int64 `json:"chunkSize"`
}

// ringView is one answer of the node, ready to place chunks; immutable.
type ringView struct {
	ring  *ring.Ring
	self  string
	addrs map[string]string // member ID -> address
	chunk int64
	at    time.Time
}

// owners places the mount's reads. Safe for concurrent use.
type owners struct {
	c      *client // the node's: the fallback, and the ring call
	o      *Options
	scheme string

	mu       sync.Mutex // guards the fields below
	view     *ringView  // nil: read everything through the node
	asking   bool       // a ring call is in progress
	clients  map[string]*minio.Client
	downTill map[string]time.Time     // member ID -> skipped until
	backoff  map[string]time.Duration // member ID -> its last skip, while it fails
	// asked counts reads sent to a member other than the node, by member
	// ID (tests check that the owner was asked).
	asked map[string]int
}

func newOwners(c *client, o *Options, scheme string) *owners {
	return &owners{c: c, o: o, scheme: scheme, clients: map[string]*minio.Client{},
		downTill: map[string]time.Time{}, backoff: map[string]time.Duration{}, asked: map[string]int{}}
}

// learn asks the node for the ring and keeps it; an endpoint that has
// none (not a cluster, not Granary) leaves reads on the node.
func (w *owners) learn(ctx context.Context) {
	v, err := w.ask(ctx)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.asking = false
	if err != nil {
		w.o.Logger.Debug().Err(err).Msg("ring not learned: reading through the node")
		if w.view != nil {
			w.view = &ringView{ring: w.view.ring, self: w.view.self, addrs: w.view.addrs, chunk: w.view.chunk, at: time.Now()}
		}
		return
	}
	w.view = v
}

// ask makes the ring call.
func (w *owners) ask(ctx context.Context) (*ringView, error) {
	ctx, cancel := context.WithTimeout(ctx, metaTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.o.Endpoint+ringPath, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Amz-Content-Sha256", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
	req = signer.SignV4(*req, w.o.AccessKey, w.o.SecretKey, "", w.region())
	resp, err := (&http.Client{Transport: w.c.tr}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("ring: status %d", resp.StatusCode)
	}
	var a ringAnswer
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&a); err != nil {
		return nil, fmt.Errorf("ring: %w", err)
	}
	if len(a.Members) < 2 || a.ChunkSize <= 0 {
		return nil, errors.New("ring: not a cluster")
	}
	v := &ringView{self: a.Self, addrs: map[string]string{}, chunk: a.ChunkSize, at: time.Now()}
	ids := make([]string, 0, len(a.Members))
	for _, m := range a.Members {
		ids = append(ids, m.ID)
		v.addrs[m.ID] = m.Addr
	}
	if v.ring, err = ring.New(ids); err != nil {
		return nil, err
	}
	return v, nil
}

func (w *owners) region() string {
	if w.o.Region != "" {
		return w.o.Region
	}
	return "us-east-1"
}

// current returns the view (nil: none), asking the node again in the
// background when it is old.
func (w *owners) current() *ringView {
	w.mu.Lock()
	defer w.mu.Unlock()
	v := w.view
	if v != nil && time.Since(v.at) > ringRefresh && !w.asking {
		w.asking = true
		go w.learn(context.Background())
	}
	return v
}

// target returns the client to read chunk idx of key through: its
// owner's, else (the node owns it, the owner is skipped, no ring) the
// node's, and the member ID asked ("" for the node).
func (w *owners) target(v *ringView, key string, idx int64) (*minio.Client, string) {
	if v == nil {
		return w.c.mc, ""
	}
	id := v.ring.Owners(ring.ChunkKey(w.c.bucket, key, idx), 1)[0]
	if id == v.self {
		return w.c.mc, ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if time.Now().Before(w.downTill[id]) {
		return w.c.mc, ""
	}
	addr := v.addrs[id]
	if !ring.Routable(addr) {
		return w.c.mc, ""
	}
	mc := w.clients[addr]
	if mc == nil {
		var err error
		mc, err = minio.New(addr, &minio.Options{
			Creds:  credentials.NewStaticV4(w.o.AccessKey, w.o.SecretKey, ""),
			Secure: w.scheme == "https", Transport: w.c.tr, Region: w.o.Region,
			BucketLookup: minio.BucketLookupPath,
			MaxRetries:   1, // a member that fails is skipped, not retried
		})
		if err != nil {
			return w.c.mc, ""
		}
		w.clients[addr] = mc
	}
	w.asked[id]++
	return mc, id
}

// failed skips member id: for ownerBackoff after it answered last, twice
// as long after each failure since, at most maxOwnerBackoff (an address
// the mount cannot reach costs a failed read that often, no more).
func (w *owners) failed(id string, err error) {
	w.mu.Lock()
	d := min(max(2*w.backoff[id], ownerBackoff), maxOwnerBackoff)
	w.backoff[id] = d
	w.downTill[id] = time.Now().Add(d)
	w.mu.Unlock()
	w.o.Logger.Warn().Err(err).Str("member", id).Dur("skipped", d).Msg("owner did not answer: reading through the node")
}

// answered forgets member id's failures.
func (w *owners) answered(id string) {
	w.mu.Lock()
	delete(w.backoff, id)
	w.mu.Unlock()
}

// askedOf is how many reads went to member id directly.
func (w *owners) askedOf(id string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.asked[id]
}

// getRange reads [off, off+len(dest)) of key at etag, each chunk's part
// from the chunk's owner, the parts at once.
func (w *owners) getRange(ctx context.Context, key, etag string, off int64, dest []byte) error {
	v := w.current()
	if v == nil {
		return w.c.getRangeVia(ctx, w.c.mc, key, etag, off, dest)
	}
	end := off + int64(len(dest))
	first, last := off/v.chunk, (end-1)/v.chunk
	if first == last {
		return w.part(ctx, v, key, etag, first, off, dest)
	}
	errs := make([]error, last-first+1)
	var wg sync.WaitGroup
	for idx := first; idx <= last; idx++ {
		lo, hi := max(off, idx*v.chunk), min(end, (idx+1)*v.chunk)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[idx-first] = w.part(ctx, v, key, etag, idx, lo, dest[lo-off:hi-off])
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// part reads dest, within chunk idx, from the chunk's owner; from the
// node if the owner does not answer or is busy (a 5xx). Only an owner
// that did not answer at all is skipped for a while.
func (w *owners) part(ctx context.Context, v *ringView, key, etag string, idx, off int64, dest []byte) error {
	mc, id := w.target(v, key, idx)
	err := w.c.getRangeVia(ctx, mc, key, etag, off, dest)
	if id == "" || !errors.Is(err, errUnavailable) || ctx.Err() != nil {
		if id != "" && err == nil {
			w.answered(id)
		}
		return err
	}
	if silent(err) {
		w.failed(id, err)
	}
	return w.c.getRangeVia(ctx, w.c.mc, key, etag, off, dest)
}

// silent reports whether a read failed without an S3 answer (refused,
// timed out): the member is not there, as against busy.
func silent(err error) bool {
	var answered minio.ErrorResponse
	return !errors.As(err, &answered)
}

// schemeOf is the scheme of an endpoint URL (validated by newClient).
func schemeOf(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "http"
	}
	return u.Scheme
}
