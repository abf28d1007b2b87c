// The S3 side of the mount: a minio-go client with bounded retries and a
// timeout on every request, and the few calls the file system makes
// (probe, HEAD, paged listing, ranged GET).
package fuse

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

const (
	// attempts bounds how often minio-go tries one request; it backs
	// off between tries (200 ms, 400 ms, capped at 1 s).
	attempts = 3
	// metaTimeout bounds one HEAD, one listing page or the probe,
	// retries included.
	metaTimeout = 10 * time.Second
	// getTimeout bounds one ranged GET, body included, retries included.
	getTimeout = 30 * time.Second
	// dialTimeout bounds one TCP connect.
	dialTimeout = 3 * time.Second
	// listPage is the number of keys asked for per listing request.
	listPage = 1000
)

// client is the bucket seen through minio-go. It is safe for concurrent
// use.
type client struct {
	mc       *minio.Client
	tr       *http.Transport
	bucket   string
	endpoint string
	// fetched counts the bytes asked for by ranged GETs (tests check
	// that random readers fetch no read-ahead).
	fetched atomic.Int64
	// heads counts HEAD requests (tests check that lookups are
	// answered from listings).
	heads atomic.Int64
	// owners, if set, sends each chunk's read to its owner (owners.go).
	owners *owners
}

// objInfo is what the file system keeps of an object or common prefix.
type objInfo struct {
	size  int64
	mtime time.Time
	etag  string
}

func newClient(o *Options) (*client, error) {
	u, err := url.Parse(o.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("fuse: endpoint %q: want http://HOST:PORT or https://HOST:PORT", o.Endpoint)
	}
	if u.Path != "" && u.Path != "/" {
		return nil, fmt.Errorf("fuse: endpoint %q: must not have a path", o.Endpoint)
	}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   dialTimeout,
		ResponseHeaderTimeout: metaTimeout,
		ExpectContinueTimeout: time.Second,
		// Bodies are ranges of binary objects: compression only costs.
		DisableCompression: true,
		TLSClientConfig:    &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: o.RootCAs},
	}
	mc, err := minio.New(u.Host, &minio.Options{
		Creds:        credentials.NewStaticV4(o.AccessKey, o.SecretKey, ""),
		Secure:       u.Scheme == "https",
		Transport:    tr,
		Region:       o.Region,
		BucketLookup: minio.BucketLookupPath,
		MaxRetries:   attempts,
		// Uploads carry a CRC32C trailer (client_write.go: put).
		TrailingHeaders: true,
	})
	if err != nil {
		return nil, fmt.Errorf("fuse: client for %s: %w", o.Endpoint, err)
	}
	return &client{mc: mc, tr: tr, bucket: o.Bucket, endpoint: o.Endpoint}, nil
}

// close drops the idle connections.
func (c *client) close() { c.tr.CloseIdleConnections() }

// probe checks that the bucket exists and that the credentials may list
// it, with one listing request of one key under prefix.
func (c *client) probe(ctx context.Context, prefix string) error {
	ctx, cancel := context.WithTimeout(ctx, metaTimeout)
	defer cancel()
	var err error
	for o := range c.mc.ListObjectsIter(ctx, c.bucket, minio.ListObjectsOptions{
		Prefix: prefix, MaxKeys: 1, FetchOwner: new(bool)}) {
		err = o.Err
		break
	}
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err == nil {
		return nil
	}
	err = s3Error("list", prefix, err)
	switch {
	case errors.Is(err, errNoBucket):
		return fmt.Errorf("fuse: bucket %q does not exist at %s: %w", c.bucket, c.endpoint, err)
	case errors.Is(err, errAccess):
		return fmt.Errorf("fuse: access to bucket %q at %s denied (check the access key and secret key): %w",
			c.bucket, c.endpoint, err)
	case errors.Is(err, errUnavailable):
		return fmt.Errorf("fuse: endpoint %s unreachable: %w", c.endpoint, err)
	default:
		return fmt.Errorf("fuse: bucket %q at %s: %w", c.bucket, c.endpoint, err)
	}
}

// head returns the attributes of the object key.
func (c *client) head(ctx context.Context, key string) (objInfo, error) {
	c.heads.Add(1)
	ctx, cancel := context.WithTimeout(ctx, metaTimeout)
	defer cancel()
	st, err := c.mc.StatObject(ctx, c.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return objInfo{}, s3Error("head", key, err)
	}
	return objInfo{size: st.Size, mtime: st.LastModified, etag: st.ETag}, nil
}

// isPrefix reports whether any key starts with prefix (which ends in
// "/"): whether prefix is a directory.
func (c *client) isPrefix(ctx context.Context, prefix string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, metaTimeout)
	defer cancel()
	for o := range c.mc.ListObjectsIter(ctx, c.bucket, minio.ListObjectsOptions{
		Prefix: prefix, MaxKeys: 1, FetchOwner: new(bool)}) {
		if o.Err != nil {
			return false, s3Error("list", prefix, o.Err)
		}
		return true, nil
	}
	if ctx.Err() != nil {
		return false, s3Error("list", prefix, ctx.Err())
	}
	return false, nil
}

// listing is one directory listing in progress, a page at a time: only
// the page minio-go holds is in memory. Close it when done.
type listing struct {
	prefix string
	next   func() (minio.ObjectInfo, bool)
	stop   func()
	ctx    context.Context
	cancel context.CancelFunc
}

// list starts listing the keys and common prefixes directly under
// prefix (which is "" or ends in "/").
func (c *client) list(ctx context.Context, prefix string) *listing {
	ctx, cancel := context.WithCancel(ctx)
	seq := c.mc.ListObjectsIter(ctx, c.bucket, minio.ListObjectsOptions{
		Prefix: prefix, MaxKeys: listPage, FetchOwner: new(bool)})
	next, stop := iter.Pull(seq)
	return &listing{prefix: prefix, next: next, stop: stop, ctx: ctx, cancel: cancel}
}

// entry returns the next child: its name, whether it is a directory and
// its attributes. ok is false at the end or on error. A request for a
// new page that takes longer than metaTimeout fails the listing.
func (l *listing) entry() (name string, dir bool, info objInfo, ok bool, err error) {
	for {
		watchdog := time.AfterFunc(metaTimeout, l.cancel)
		o, more := l.next()
		fired := !watchdog.Stop()
		if !more {
			// minio-go ends a cancelled listing silently: a
			// cancelled context here means the listing is cut short.
			if fired || l.ctx.Err() != nil {
				return "", false, objInfo{}, false, s3Error("list", l.prefix, context.DeadlineExceeded)
			}
			return "", false, objInfo{}, false, nil
		}
		if o.Err != nil {
			return "", false, objInfo{}, false, s3Error("list", l.prefix, o.Err)
		}
		rest, found := strings.CutPrefix(o.Key, l.prefix)
		if !found {
			continue
		}
		dir = strings.HasSuffix(rest, "/")
		rest = strings.TrimSuffix(rest, "/")
		if !validName(rest) {
			// The folder marker of this very directory, or a key
			// no POSIX name can show ("a//b", "..", too long).
			continue
		}
		return rest, dir, objInfo{size: o.Size, mtime: o.LastModified, etag: o.ETag}, true, nil
	}
}

// close ends the listing and its coroutine.
func (l *listing) close() {
	l.cancel()
	l.stop()
}

// validName reports whether a key component can be shown as a file
// name.
func validName(name string) bool {
	return name != "" && name != "." && name != ".." && len(name) <= 255 &&
		!strings.ContainsAny(name, "/\x00")
}

// getRange reads the bytes [off, off+len(dest)) of key at version etag
// into dest. A changed object fails with errStale, never with bytes of
// another version.
func (c *client) getRange(ctx context.Context, key, etag string, off int64, dest []byte) error {
	if len(dest) == 0 {
		return nil
	}
	c.fetched.Add(int64(len(dest)))
	if c.owners != nil {
		return c.owners.getRange(ctx, key, etag, off, dest)
	}
	return c.getRangeVia(ctx, c.mc, key, etag, off, dest)
}

// getRangeVia is getRange through mc: the node's client or a member's.
func (c *client) getRangeVia(ctx context.Context, mc *minio.Client, key, etag string, off int64, dest []byte) error {
	ctx, cancel := context.WithTimeout(ctx, getTimeout)
	defer cancel()
	var opts minio.GetObjectOptions
	if err := opts.SetRange(off, off+int64(len(dest))-1); err != nil {
		return fmt.Errorf("get %q: %w: %w", key, errInvalid, err)
	}
	if etag != "" {
		if err := opts.SetMatchETag(etag); err != nil {
			return fmt.Errorf("get %q: %w: %w", key, errInvalid, err)
		}
	}
	body, _, _, err := minio.Core{Client: mc}.GetObject(ctx, c.bucket, key, opts)
	if err != nil {
		return s3Error("get", key, err)
	}
	defer body.Close()
	if _, err := io.ReadFull(body, dest); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			// Shorter than the pinned size: the object changed.
			return fmt.Errorf("get %q: %w: short body", key, errStale)
		}
		return s3Error("get", key, err)
	}
	return nil
}
