// The one lean S3 GET client every target is measured with: net/http with
// a tuned Transport and SigV4 header signing (minio-go's signer; plain
// unsigned GETs for an anonymous target such as nginx), checking every
// byte it reads against the expected object.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7/pkg/signer"
)

// emptySHA256 is the payload hash of a request without a body.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// readBufSize is the client's read buffer per request.
const readBufSize = 256 << 10

// client issues GETs to one target, signed unless it is anonymous.
type client struct {
	t      target
	bucket string
	http   *http.Client
	// hits and others count the answers carrying a cache status header
	// (nginx's): HIT, and anything else (MISS, EXPIRED, ...).
	hits, others atomic.Int64
	// place, if set, sends each read to its chunk's owner (a cluster
	// read by the ring); else reads go to the target.
	place *placer
}

func newClient(t target, bucket string, conns int) *client {
	tr := &http.Transport{
		MaxIdleConns:        conns * 2,
		MaxIdleConnsPerHost: conns * 2,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ReadBufferSize:      readBufSize,
		WriteBufferSize:     16 << 10,
		ForceAttemptHTTP2:   false,
		TLSClientConfig:     &tls.Config{RootCAs: t.roots}, // HTTP/1.1 over TLS: no ALPN offered
	}
	// A redirect is followed by get, re-signed for its host, never by net/http.
	noFollow := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &client{t: t, bucket: bucket, http: &http.Client{Transport: tr, Timeout: 10 * time.Minute, CheckRedirect: noFollow}}
}

func (c *client) close() { c.http.CloseIdleConnections() }

// cacheHits returns the answers so far with a cache status header: hits,
// and the others.
func (c *client) cacheHits() (hits, others int64) { return c.hits.Load(), c.others.Load() }

// get reads bytes [off, off+len(want)) of key (the whole object when whole
// is true) and checks them against want. buf is the caller's scratch
// buffer. It returns the bytes read.
func (c *client) get(ctx context.Context, key string, off int64, want []byte, whole bool, buf []byte) (int64, error) {
	rng := ""
	if !whole {
		rng = fmt.Sprintf("bytes=%d-%d", off, off+int64(len(want))-1)
	}
	base := c.t.endpoint
	if c.place != nil {
		base = c.place.endpoint(c.bucket, key, off)
	}
	resp, err := c.send(ctx, base+"/"+c.bucket+"/"+key, rng, c.t.route)
	if err != nil {
		return 0, err
	}
	if loc := ownerLocation(resp); loc != "" {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // read whole, the connection is kept
		resp.Body.Close()
		if resp, err = c.send(ctx, loc, rng, false); err != nil {
			return 0, err
		}
	}
	defer resp.Body.Close()
	countCacheStatus(resp.Header, &c.hits, &c.others)
	wantStatus := http.StatusOK
	if !whole {
		wantStatus = http.StatusPartialContent
	}
	if resp.StatusCode != wantStatus {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return 0, fmt.Errorf("%s %s: status %d, want %d: %s", c.t.name, key, resp.StatusCode, wantStatus, body)
	}
	if cl := resp.Header.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(want)) {
		return 0, fmt.Errorf("%s %s: Content-Length %s, want %d", c.t.name, key, cl, len(want))
	}
	return verifyBody(resp.Body, want, buf, c.t.name+" "+key)
}

// send GETs url with the Range rng (none if empty), signed unless the
// target is anonymous, asking for owner routing if route is set.
func (c *client) send(ctx context.Context, url, rng string, route bool) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	if route {
		req.Header.Set("X-Granary-Route", "owner")
	}
	if !c.t.anonymous {
		req.Header.Set("X-Amz-Content-Sha256", emptySHA256)
		region := c.t.region
		if region == "" {
			region = "us-east-1"
		}
		req = signer.SignV4(*req, c.t.access, c.t.secret, "", region)
	}
	return c.http.Do(req)
}

// ownerLocation is where a Granary member redirected a GET that asked
// for owner routing, or "" if resp is no such redirect.
func ownerLocation(resp *http.Response) string {
	if resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("X-Granary-Owner") == "" {
		return ""
	}
	return resp.Header.Get("Location")
}

// verifyBody reads r to its end, comparing it with want as it goes, so a
// fast wrong answer fails instead of counting.
func verifyBody(r io.Reader, want, buf []byte, what string) (int64, error) {
	var n int64
	for {
		k, err := r.Read(buf)
		if k > 0 {
			if n+int64(k) > int64(len(want)) || !bytes.Equal(buf[:k], want[n:n+int64(k)]) {
				return n, fmt.Errorf("%s: wrong bytes at offset %d", what, n)
			}
			n += int64(k)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, fmt.Errorf("%s: read at %d: %w", what, n, err)
		}
	}
	if n != int64(len(want)) {
		return n, fmt.Errorf("%s: %d bytes, want %d", what, n, len(want))
	}
	return n, nil
}
