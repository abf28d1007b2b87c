// The client: the calls a node makes on other members, signed with the
// cluster secret, each bounded by a timeout.
package peer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/granary-dev/granary/cluster"
	"github.com/granary-dev/granary/internal/directhttp"
	"github.com/granary-dev/granary/internal/stallconn"
	"github.com/granary-dev/granary/store"
)

// DefaultTimeout bounds a call's connect, each write of its body and its
// wait for the answer's headers (a chunk's body is bounded by the
// caller's stall timeout).
const DefaultTimeout = 3 * time.Second

// Client makes calls from node self. Safe for concurrent use.
type Client struct {
	self    string
	key     *secretMAC // the cluster secret's
	timeout time.Duration
	rt      http.RoundTripper // tr, but for tests
	tr      *directhttp.Transport
	scheme  string        // http, or https (see WithTLS)
	boot    int64         // the nonces' first half (see replay.go)
	seq     atomic.Uint64 // the last nonce's second half
}

// NewClient returns a client for node self; timeout <= 0 means
// DefaultTimeout.
func NewClient(self string, secret []byte, timeout time.Duration) *Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	// A write that stalls for the timeout fails: a member that stopped
	// reading (hung, its kernel still holding the connection) must not
	// hold a replica's sender forever.
	dial := stallconn.Dial(&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}, timeout)
	tr := &directhttp.Transport{Dial: dial, HeaderTimeout: timeout, Other: &http.Transport{
		DialContext:           dial,
		ResponseHeaderTimeout: timeout,
		MaxIdleConnsPerHost:   directhttp.MaxIdlePerHost,
		IdleConnTimeout:       directhttp.IdleFor,
		DisableCompression:    true,
	}}
	return &Client{self: self, key: newSecretMAC(secret), timeout: timeout, rt: tr, tr: tr,
		scheme: "http", boot: time.Now().UnixNano()}
}

// WithTLS makes c speak HTTPS, verifying members with cfg (their
// certificates must name the address they are reached at). Call it
// before the first call.
func (c *Client) WithTLS(cfg *tls.Config) *Client {
	c.tr.TLS = cfg
	c.tr.Other.TLSClientConfig = cfg
	c.scheme = "https"
	return c
}

// Timeout is the client's per-call timeout.
func (c *Client) Timeout() time.Duration { return c.timeout }

// Close drops idle connections.
func (c *Client) Close() { c.tr.CloseIdleConnections() }

// maxRefusal bounds a refusal's body (its JSON).
const maxRefusal = 64 << 10

// answer is a member's 2xx answer to a signed call, its seal not checked
// yet: the caller reads it as a body (body) or a chunk (chunk).
type answer struct {
	*http.Response
	peer string
	key  answerKey
}

// encoder is a call's query: url.Values, or chunkQuery.
type encoder interface{ Encode() string }

// do sends a signed request to member to and returns the answer if its
// status is 2xx; otherwise an *Error, if the member sealed the refusal
// or refused to admit the call (it cannot seal those), else an error
// matching ErrBadAnswer. A body streams (chunked), bound to the
// signature by its trailer.
func (c *Client) do(ctx context.Context, method string, to cluster.Member, route string, q encoder, body io.Reader, hdr http.Header) (*answer, error) {
	u := &url.URL{Scheme: c.scheme, Host: to.Addr, Path: route}
	if q != nil {
		u.RawQuery = q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	sig := c.sign(req, to.ID)
	c.attach(req, sig, body)
	resp, err := c.rt.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("peer %s: %w", to.ID, err)
	}
	a := &answer{Response: resp, peer: to.ID, key: newAnswerKey(c.key, sig)}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, a.refusal()
	}
	return a, nil
}

// refusal reads a non-2xx answer as its error.
func (a *answer) refusal() error {
	msg, err := io.ReadAll(io.LimitReader(a.Body, maxRefusal))
	if err != nil {
		return fmt.Errorf("peer %s: %d answer: %w", a.peer, a.StatusCode, err)
	}
	e := decodeError(a.peer, a.StatusCode, bytes.TrimSpace(msg))
	if a.check(modeBody, msg) == nil {
		return e
	}
	if e.Code == CodeUnauthenticated || e.Code == CodeCertRequired {
		return e // the call was not admitted: nothing to seal with
	}
	return fmt.Errorf("peer %s: %w: %d %s", a.peer, ErrBadAnswer, a.StatusCode, bytes.TrimSpace(msg[:min(len(msg), 200)]))
}

// check checks the answer's seal, its body travelling as mode (body: the
// body of modeBody).
func (a *answer) check(mode string, body []byte) error {
	got := a.Header.Get(HeaderAnswer)
	if got == "" {
		return fmt.Errorf("peer %s: %w: the answer carries no seal (is the member an older version?)", a.peer, ErrBadAnswer)
	}
	if !a.key.sealMatches(got, a.StatusCode, mode, a.Header.Get(HeaderObject), body) {
		if mode == modeFrames && a.key.sealMatches(got, a.StatusCode, modeGMACFrames, a.Header.Get(HeaderObject), body) {
			return fmt.Errorf("peer %s: %w: the member tags chunk frames as an earlier version did; upgrade the cluster's members together", a.peer, ErrBadAnswer)
		}
		return fmt.Errorf("peer %s: %w: its seal does not match", a.peer, ErrBadAnswer)
	}
	return nil
}

// body reads the whole answer, at most limit bytes, and checks its seal.
func (a *answer) body(limit int64) ([]byte, error) {
	defer a.Body.Close()
	b, err := io.ReadAll(io.LimitReader(a.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("peer %s: %w", a.peer, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("peer %s: an answer longer than %d bytes", a.peer, limit)
	}
	if err := a.check(modeBody, b); err != nil {
		return nil, err
	}
	return b, nil
}

// chunkMode is how c asks for a chunk: raw over HTTPS, else in frames.
func (c *Client) chunkMode() (string, http.Header) {
	if c.scheme == "https" {
		return modeRaw, http.Header{HeaderRaw: {"1"}}
	}
	return modeFrames, nil
}

// sealedChunk checks the seal of an answer with a chunk travelling as
// mode; it closes the answer if that fails.
func (a *answer) sealedChunk(mode string) error {
	err := a.check(mode, nil)
	if err != nil {
		a.Body.Close()
	}
	return err
}

// chunk checks the length of an answer (its seal checked) with a chunk
// of n bytes travelling as mode, and returns the chunk: each frame's
// bytes once checked, or (raw, over TLS) exactly n bytes. It closes the
// answer if it fails.
func (a *answer) chunk(mode string, n int64) (io.ReadCloser, error) {
	want := n
	if mode == modeFrames {
		want = framedLen(n)
	}
	if a.ContentLength != want {
		a.Body.Close()
		return nil, fmt.Errorf("peer %s: %d chunk bytes answered in %d, want %d", a.peer, n, a.ContentLength, want)
	}
	if mode == modeRaw {
		return &exactBody{rc: a.Body, left: n}, nil
	}
	return &frameReader{rc: a.Body, key: a.key, peer: a.peer, left: n}, nil
}

// exactBody fails with io.ErrUnexpectedEOF if its body ends before left
// bytes (a member that died or gave up mid-chunk).
type exactBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *exactBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if err == io.EOF && b.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (b *exactBody) Close() error { return b.rc.Close() }

// sign sets the headers that sign req for member to, and returns the
// signature.
func (c *Client) sign(req *http.Request, to string) string {
	req.Header.Set(HeaderFrom, c.self)
	req.Header.Set(HeaderTo, to)
	req.Header.Set(HeaderTime, stamp(time.Now()))
	req.Header.Set(HeaderNonce, c.nonce())
	s := signed{method: req.Method, path: req.URL.EscapedPath(), query: req.URL.RawQuery}
	for k, vs := range req.Header {
		for _, v := range vs {
			addHeader(&s, k, v)
		}
	}
	sig := s.signature(c.key)
	req.Header.Set(HeaderSig, sig)
	return sig
}

// nonce is the next request's number, "boot.seq" (see replay.go).
func (c *Client) nonce() string {
	b := make([]byte, 0, 40)
	b = strconv.AppendInt(b, c.boot, 10)
	b = append(b, '.')
	return string(strconv.AppendUint(b, c.seq.Add(1), 10))
}

// attach makes body (if not nil) req's body, streamed (chunked) and bound
// to the signature sig by its trailer.
func (c *Client) attach(req *http.Request, sig string, body io.Reader) {
	if body == nil {
		return
	}
	req.Trailer = http.Header{TrailerBody: nil}
	req.ContentLength = -1 // chunked: trailers follow the body
	req.Body = io.NopCloser(&bodySigner{r: body, h: sha256.New(), key: c.key, sig: sig,
		trailer: func(v string) { req.Trailer.Set(TrailerBody, v) }})
}

// call is do for calls whose answer has no body worth reading, bounded by
// the client's timeout as a whole.
func (c *Client) call(ctx context.Context, method string, to cluster.Member, route string, q encoder, body io.Reader, hdr http.Header) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	a, err := c.do(ctx, method, to, route, q, body, hdr)
	if err != nil {
		return err
	}
	_, err = a.body(1 << 16)
	return err
}

// getJSON is a GET whose answer is JSON decoded into out, bounded by the
// client's timeout as a whole.
func (c *Client) getJSON(ctx context.Context, to cluster.Member, route string, q url.Values, limit int64, out any) error {
	return c.doJSON(ctx, http.MethodGet, to, route, q, limit, out)
}

// doJSON is a call without a body whose answer (at most limit bytes) is
// JSON decoded into out, bounded by the client's timeout as a whole.
func (c *Client) doJSON(ctx context.Context, method string, to cluster.Member, route string, q url.Values, limit int64, out any) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	a, err := c.do(ctx, method, to, route, q, nil, nil)
	if err != nil {
		return err
	}
	b, err := a.body(limit)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("peer %s: %s: %w", to.ID, route, err)
	}
	return nil
}

// GetChunk streams the chunk r names from member to, from r.Off on. The
// owner answers from its tiers or fills itself from the origin (with
// r.CachedOnly, from its tiers only, else an error matching
// store.ErrNotFound at once). The body yields exactly r.Len-r.Off bytes,
// each only once checked (see answer.go), or fails: with
// io.ErrUnexpectedEOF if it ends early, ErrBadAnswer if it is not the
// member's; ctx bounds the whole read.
func (c *Client) GetChunk(ctx context.Context, to cluster.Member, r ChunkRequest) (io.ReadCloser, error) {
	mode, hdr := c.chunkMode()
	a, err := c.do(ctx, http.MethodGet, to, RouteChunk, chunkQuery(r), nil, hdr)
	if err != nil {
		return nil, err
	}
	if err := a.sealedChunk(mode); err != nil {
		return nil, err
	}
	return a.chunk(mode, r.Len-r.Off)
}

// PutChunk places chunk id (its whole bytes; objects cut into chunk-byte
// chunks) on member to, admitted there past its tiers' policy (written or
// warmed data).
func (c *Client) PutChunk(ctx context.Context, to cluster.Member, id store.ChunkID, chunk int64, data []byte) error {
	r := ChunkRequest{ID: id, Len: int64(len(data)), Chunk: chunk}
	return c.call(ctx, http.MethodPut, to, RouteChunk, chunkQuery(r), bytes.NewReader(data), nil)
}

// Forget tells member to drop what it caches of bucket/key (an object
// written or deleted through this node). written, if set, is the new
// version, which this node holds before the origin does (write-back): the
// member learns it and where to read it meanwhile.
func (c *Client) Forget(ctx context.Context, to cluster.Member, bucket, key string, written *store.ObjectInfo) error {
	var hdr http.Header
	if written != nil {
		v, err := encodeObject(*written)
		if err != nil {
			return err
		}
		hdr = http.Header{HeaderObject: {v}}
	}
	return c.call(ctx, http.MethodPost, to, RouteForget, url.Values{"bucket": {bucket}, "key": {key}}, nil, hdr)
}

// ForgetAll tells member to to drop every object's metadata and listing
// it caches (it missed more changes than this node could list).
func (c *Client) ForgetAll(ctx context.Context, to cluster.Member) error {
	return c.call(ctx, http.MethodPost, to, RouteForget, url.Values{"all": {"1"}}, nil, nil)
}

// Ping checks that member to answers as the node it is listed as.
func (c *Client) Ping(ctx context.Context, to cluster.Member) error {
	var who struct{ ID string }
	if err := c.getJSON(ctx, to, RoutePing, nil, 4096, &who); err != nil {
		return err
	}
	if who.ID != to.ID {
		return fmt.Errorf("peer %s: %s answers as node %q", to.ID, to.Addr, who.ID)
	}
	return nil
}

// PutReplica sends member to a durable copy of a write-back object this
// node acknowledged (info names it; body is its info.Size bytes). It
// returns once the copy is durable there. The body may take as long as it
// takes; ctx bounds it.
func (c *Client) PutReplica(ctx context.Context, to cluster.Member, info store.ObjectInfo, body io.Reader) error {
	v, err := encodeObject(info)
	if err != nil {
		return err
	}
	hdr := http.Header{HeaderObject: {v}}
	a, err := c.do(ctx, http.MethodPut, to, RouteReplica, url.Values{"bucket": {info.Bucket}, "key": {info.Key}}, body, hdr)
	if err != nil {
		return err
	}
	_, err = a.body(1 << 16)
	return err
}

// DropReplica tells member to that this node's object bucket/key, version
// etag, is at the origin: its copy can go.
func (c *Client) DropReplica(ctx context.Context, to cluster.Member, bucket, key, etag string) error {
	return c.call(ctx, http.MethodDelete, to, RouteReplica, url.Values{"bucket": {bucket}, "key": {key}, "etag": {etag}}, nil, nil)
}

// pendingAnswer is the answer of RoutePending.
type pendingAnswer struct {
	Pending bool `json:"pending"`
}

// Pending asks member to whether a write of bucket/key through it still
// waits for the origin (a replica asks a live primary about a copy it
// keeps for it).
func (c *Client) Pending(ctx context.Context, to cluster.Member, bucket, key string) (bool, error) {
	var a pendingAnswer
	err := c.getJSON(ctx, to, RoutePending, url.Values{"bucket": {bucket}, "key": {key}}, 4096, &a)
	return a.Pending, err
}

// Status returns member to's status document for the query (bucket,
// prefix, key), raw.
func (c *Client) Status(ctx context.Context, to cluster.Member, q url.Values) (json.RawMessage, error) {
	var st json.RawMessage
	err := c.getJSON(ctx, to, RouteStatus, q, 16<<20, &st)
	return st, err
}

// Head asks member to (the owner of an object's first chunk) for the
// object's info: from its metadata cache, else from the origin together
// with the first chunk (with cachedOnly: from its cache only, else an
// error matching store.ErrNotFound). A missing object is an error
// matching store.ErrNoSuchKey (or ErrNoSuchBucket); any other failure
// means ask someone else.
func (c *Client) Head(ctx context.Context, to cluster.Member, bucket, key string, cachedOnly bool) (store.ObjectInfo, error) {
	q := url.Values{"bucket": {bucket}, "key": {key}}
	if cachedOnly {
		q.Set("cached", "1")
	}
	return c.head(ctx, to, bucket, key, q)
}

// GetFirst asks member to (the owner of an object's first chunk) for the
// object's info and its first chunk in one call: what a member that has
// neither needs to start a read (one round trip, not a Head and a
// GetChunk). The owner answers from its caches or reads the origin once,
// as Head does. The body yields exactly the first chunk's bytes (none
// for an empty object) or fails with io.ErrUnexpectedEOF; errors are
// Head's. ctx bounds the whole read.
func (c *Client) GetFirst(ctx context.Context, to cluster.Member, bucket, key string, chunk int64) (store.ObjectInfo, io.ReadCloser, error) {
	q := url.Values{"bucket": {bucket}, "key": {key}, "chunk": {strconv.FormatInt(chunk, 10)}}
	mode, hdr := c.chunkMode()
	a, err := c.do(ctx, http.MethodGet, to, RouteFirst, q, nil, hdr)
	if err != nil {
		return store.ObjectInfo{}, nil, err
	}
	if err := a.sealedChunk(mode); err != nil { // the info is trusted only sealed
		return store.ObjectInfo{}, nil, err
	}
	info, err := decodeObject(a.Header.Get(HeaderObject), bucket, key)
	if err != nil {
		a.Body.Close()
		return store.ObjectInfo{}, nil, fmt.Errorf("peer %s: first of %s/%s: %w", to.ID, bucket, key, err)
	}
	body, err := a.chunk(mode, firstLen(info, chunk))
	if err != nil {
		return store.ObjectInfo{}, nil, err
	}
	return info, body, nil
}

// StaleHeader is a Backend that can answer a HEAD from its metadata cache
// whatever the entry's age (for a member whose origin does not answer).
type StaleHeader interface {
	HeadStale(bucket, key string) (store.ObjectInfo, error)
}

// HeadStale asks member to for an object's info from its metadata cache,
// however old (store.ErrNotFound if it has none): what a member serves
// from when the origin does not answer.
func (c *Client) HeadStale(ctx context.Context, to cluster.Member, bucket, key string) (store.ObjectInfo, error) {
	return c.head(ctx, to, bucket, key, url.Values{"bucket": {bucket}, "key": {key}, "cached": {"1"}, "stale": {"1"}})
}

func (c *Client) head(ctx context.Context, to cluster.Member, bucket, key string, q url.Values) (store.ObjectInfo, error) {
	var info store.ObjectInfo
	if err := c.getJSON(ctx, to, RouteHead, q, 1<<20, &info); err != nil {
		return store.ObjectInfo{}, err
	}
	if info.Bucket != bucket || info.Key != key {
		return store.ObjectInfo{}, fmt.Errorf("peer %s: head of %s/%s answered for %s/%s", to.ID, bucket, key, info.Bucket, info.Key)
	}
	return info, nil
}
