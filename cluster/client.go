// The peer client: the calls a node makes on another node's peer
// protocol, signed with the cluster secret, each bounded by a timeout.
package cluster

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/granary-dev/granary/store"
)

// Peer routes, under PeerPrefix.
const (
	RouteChunk   = PeerPrefix + "chunk"   // GET a chunk (from off), PUT one
	RouteForget  = PeerPrefix + "forget"  // POST: drop an object's cached metadata and data
	RoutePing    = PeerPrefix + "ping"    // GET: the node's ID
	RouteReplica = PeerPrefix + "replica" // PUT a write-back copy, DELETE it
	RouteStatus  = PeerPrefix + "status"  // GET: the node's status (query as /_granary/status)
	RouteHead    = PeerPrefix + "head"    // GET: an object's info, as the owner of its first chunk knows it
)

// HeaderObject carries a replica's object info (base64 of its JSON).
const HeaderObject = "X-Granary-Object"

// DefaultTimeout bounds a peer call's connect and its wait for response
// headers (a chunk's body is bounded by its own stall timeout).
const DefaultTimeout = 3 * time.Second

// Client makes peer calls from node Self. Safe for concurrent use.
type Client struct {
	self    string
	secret  []byte
	timeout time.Duration
	http    *http.Client
}

// NewClient returns a client for node self; timeout <= 0 means
// DefaultTimeout.
func NewClient(self string, secret []byte, timeout time.Duration) *Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	tr := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext,
		ResponseHeaderTimeout: timeout,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
	}
	return &Client{self: self, secret: secret, timeout: timeout, http: &http.Client{Transport: tr}}
}

// Timeout is the client's per-call timeout.
func (c *Client) Timeout() time.Duration { return c.timeout }

// Close drops idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// chunkQuery names chunk id (n bytes, of objects cut into chunk-byte
// chunks) in a query.
func chunkQuery(id store.ChunkID, n, chunk int64) url.Values {
	return url.Values{
		"bucket": {id.Bucket}, "key": {id.Key}, "etag": {id.ETag},
		"index": {strconv.FormatInt(id.Index, 10)},
		"len":   {strconv.FormatInt(n, 10)}, "chunk": {strconv.FormatInt(chunk, 10)},
	}
}

// do sends a signed request to member to and returns the response if its
// status is 2xx; otherwise an error naming the status and message.
func (c *Client) do(ctx context.Context, method string, to Member, route string, q url.Values, body io.Reader, hdr http.Header) (*http.Response, error) {
	u := &url.URL{Scheme: "http", Host: to.Addr, Path: route, RawQuery: q.Encode()}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	sign(req, c.secret, c.self, time.Now())
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("peer %s: %w", to.ID, err)
	}
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return nil, &StatusError{Peer: to.ID, Code: resp.StatusCode, Msg: string(bytes.TrimSpace(msg))}
	}
	return resp, nil
}

// StatusError is a peer's refusal: a non-2xx answer.
type StatusError struct {
	Peer string
	Code int
	Msg  string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("peer %s: HTTP %d: %s", e.Peer, e.Code, e.Msg)
}

// call is do for calls without a response body worth reading, bounded by
// the client's timeout as a whole.
func (c *Client) call(ctx context.Context, method string, to Member, route string, q url.Values, body io.Reader, hdr http.Header) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.do(ctx, method, to, route, q, body, hdr)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	return resp.Body.Close()
}

// GetChunk streams chunk id (n bytes long, objects cut in chunk-byte
// chunks) from member to, from byte off on. The owner answers from its
// tiers or fills itself from the origin; with cachedOnly, from its tiers
// only, else 404 at once (a hand-off from a former owner). The body
// yields exactly n-off bytes or fails with io.ErrUnexpectedEOF; ctx
// bounds the whole read.
func (c *Client) GetChunk(ctx context.Context, to Member, id store.ChunkID, n, chunk, off int64, cachedOnly bool) (io.ReadCloser, error) {
	q := chunkQuery(id, n, chunk)
	q.Set("off", strconv.FormatInt(off, 10))
	if cachedOnly {
		q.Set("cached", "1")
	}
	resp, err := c.do(ctx, http.MethodGet, to, RouteChunk, q, nil, nil)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength != n-off {
		resp.Body.Close()
		return nil, fmt.Errorf("peer %s: chunk of %d bytes from %d answered with %d", to.ID, n, off, resp.ContentLength)
	}
	return &exactBody{rc: resp.Body, left: n - off}, nil
}

// exactBody fails with io.ErrUnexpectedEOF if its body ends before left
// bytes (a peer that died or gave up mid-chunk).
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

// PutChunk places chunk id (its whole bytes) on member to, admitted
// there past its tiers' policy (written or warmed data).
func (c *Client) PutChunk(ctx context.Context, to Member, id store.ChunkID, chunk int64, data []byte) error {
	return c.call(ctx, http.MethodPut, to, RouteChunk, chunkQuery(id, int64(len(data)), chunk), bytes.NewReader(data), nil)
}

// Forget tells member to drop what it caches of bucket/key (an object
// written or deleted through this node). written, if set, is the new
// version, which this node holds before the origin does (write-back): the
// member learns it and where to read it meanwhile.
func (c *Client) Forget(ctx context.Context, to Member, bucket, key string, written *store.ObjectInfo) error {
	var hdr http.Header
	if written != nil {
		js, err := json.Marshal(written)
		if err != nil {
			return err
		}
		hdr = http.Header{HeaderObject: {base64.StdEncoding.EncodeToString(js)}}
	}
	return c.call(ctx, http.MethodPost, to, RouteForget, url.Values{"bucket": {bucket}, "key": {key}}, nil, hdr)
}

// Ping checks that member to answers as the node it is listed as.
func (c *Client) Ping(ctx context.Context, to Member) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.do(ctx, http.MethodGet, to, RoutePing, nil, nil, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var who struct{ ID string }
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&who); err != nil {
		return fmt.Errorf("peer %s: ping: %w", to.ID, err)
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
func (c *Client) PutReplica(ctx context.Context, to Member, info store.ObjectInfo, body io.Reader) error {
	js, err := json.Marshal(info)
	if err != nil {
		return err
	}
	hdr := http.Header{HeaderObject: {base64.StdEncoding.EncodeToString(js)}}
	resp, err := c.do(ctx, http.MethodPut, to, RouteReplica, url.Values{"bucket": {info.Bucket}, "key": {info.Key}}, body, hdr)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	return resp.Body.Close()
}

// DropReplica tells member to that this node's object bucket/key, version
// etag, is at the origin: its copy can go.
func (c *Client) DropReplica(ctx context.Context, to Member, bucket, key, etag string) error {
	return c.call(ctx, http.MethodDelete, to, RouteReplica, url.Values{"bucket": {bucket}, "key": {key}, "etag": {etag}}, nil, nil)
}

// Status returns member to's status document for the query (bucket,
// prefix, key), raw.
func (c *Client) Status(ctx context.Context, to Member, q url.Values) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.do(ctx, http.MethodGet, to, RouteStatus, q, nil, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("peer %s: status: %w", to.ID, err)
	}
	return json.RawMessage(b), nil
}

// Head asks member to (the owner of an object's first chunk) for the
// object's info: from its metadata cache, else from the origin together
// with the first chunk (with cachedOnly: from its cache only, else
// store.ErrNoSuchKey). A missing object is store.ErrNoSuchKey (or
// ErrNoSuchBucket); any other failure means ask someone else.
func (c *Client) Head(ctx context.Context, to Member, bucket, key string, cachedOnly bool) (store.ObjectInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	q := url.Values{"bucket": {bucket}, "key": {key}}
	if cachedOnly {
		q.Set("cached", "1")
	}
	resp, err := c.do(ctx, http.MethodGet, to, RouteHead, q, nil, nil)
	var se *StatusError
	switch {
	case errors.As(err, &se) && se.Code == http.StatusNotFound && strings.Contains(se.Msg, "NoSuchBucket"):
		return store.ObjectInfo{}, fmt.Errorf("peer %s: %s: %w", to.ID, bucket, store.ErrNoSuchBucket)
	case errors.As(err, &se) && se.Code == http.StatusNotFound:
		return store.ObjectInfo{}, fmt.Errorf("peer %s: %s/%s: %w", to.ID, bucket, key, store.ErrNoSuchKey)
	case err != nil:
		return store.ObjectInfo{}, err
	}
	defer resp.Body.Close()
	var info store.ObjectInfo
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&info); err != nil {
		return store.ObjectInfo{}, fmt.Errorf("peer %s: head: %w", to.ID, err)
	}
	if info.Bucket != bucket || info.Key != key {
		return store.ObjectInfo{}, fmt.Errorf("peer %s: head of %s/%s answered for %s/%s", to.ID, bucket, key, info.Bucket, info.Key)
	}
	return info, nil
}

// DecodeObject reads a replica's object info from its header value.
func DecodeObject(v string) (store.ObjectInfo, error) {
	var info store.ObjectInfo
	js, err := base64.StdEncoding.DecodeString(v)
	if err == nil {
		err = json.Unmarshal(js, &info)
	}
	if err != nil || info.Bucket == "" || info.Key == "" || info.Size < 0 {
		return store.ObjectInfo{}, fmt.Errorf("cluster: bad %s header", HeaderObject)
	}
	return info, nil
}
