// Package s3 is the origin over any S3-compatible server (MinIO, Ceph,
// OSS, AWS) through minio-go. Buckets and keys map one to one. Every
// minio-go error is translated once, at this boundary, into the store
// sentinels; an unreachable origin fails within seconds, never hangs.
package s3

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/s3utils"

	"github.com/granary-dev/granary/internal/stallconn"
	"github.com/granary-dev/granary/store"
)

// Options configure an S3 origin. Zero values take the documented defaults.
type Options struct {
	Endpoint  string // host:port; required
	Secure    bool   // HTTPS
	Region    string // default "us-east-1" (set, so no bucket-location lookups)
	AccessKey string
	SecretKey string
	// RootCAs, if set, are what an HTTPS origin's certificate is verified
	// against (a private CA); nil means the system's.
	RootCAs *x509.CertPool
	// Transport replaces the tuned default transport (DialTimeout,
	// ResponseHeaderTimeout and RootCAs then do not apply).
	Transport http.RoundTripper
	// DialTimeout bounds connecting to the origin. Default 2 s.
	DialTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for a response once a request
	// (with its body) was sent, so a hung origin fails too. Default 30 s.
	// S3 servers answer long operations (copy, complete multipart) with
	// early headers, so they are not cut short.
	ResponseHeaderTimeout time.Duration
	// WriteStallTimeout bounds each write to the origin's connection
	// (a request body the origin stops reading fails instead of hanging);
	// a write that makes progress runs as long as it needs. Default 30 s.
	WriteStallTimeout time.Duration
	// MaxAttempts is how often a request is tried (minio-go retries with
	// backoff). Default 3, so a down origin errors in a few seconds.
	MaxAttempts int
	// PartSize is the multipart part size, and the memory one Put of
	// unknown size buffers. Default 16 MiB; at least 5 MiB (the S3
	// minimum). Objects of unknown size are limited to 10,000 parts.
	PartSize int64
	// MaxSinglePut is the largest Put of known size sent as one PUT,
	// streamed (so the origin names it by its MD5, as S3 names a client's
	// PUT); a larger one goes as a multipart upload of PartSize parts.
	// Default and at most 5 GiB, S3's limit for one PUT.
	MaxSinglePut int64
	// PayloadCRC32C sends upload bodies unsigned, each checked by the
	// origin against a trailing CRC32C (STREAMING-UNSIGNED-PAYLOAD-TRAILER),
	// instead of signed with SHA-256 as minio-go does over plain HTTP:
	// about a third of the CPU per byte uploaded. The origin must accept
	// trailing checksums (MinIO does; older Ceph RGW does not). Over
	// HTTPS minio-go sends bodies unsigned anyway; this adds the CRC.
	PayloadCRC32C bool
}

const (
	defaultRegion      = "us-east-1"
	defaultDialTimeout = 2 * time.Second
	defaultRespTimeout = 30 * time.Second
	defaultAttempts    = 3
	defaultPartSize    = 16 << 20
	minPartSize        = 5 << 20
	maxParts           = 10000
	maxSinglePut       = 5 << 30 // S3's largest PUT
)

func (o Options) normalize() (Options, error) {
	if o.Endpoint == "" {
		return o, errors.New("s3: Options.Endpoint is required")
	}
	if o.Region == "" {
		o.Region = defaultRegion
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = defaultDialTimeout
	}
	if o.ResponseHeaderTimeout <= 0 {
		o.ResponseHeaderTimeout = defaultRespTimeout
	}
	if o.WriteStallTimeout <= 0 {
		o.WriteStallTimeout = defaultRespTimeout
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = defaultAttempts
	}
	if o.PartSize == 0 {
		o.PartSize = defaultPartSize
	}
	if o.PartSize < minPartSize {
		return o, fmt.Errorf("s3: PartSize %d below the S3 minimum of %d", o.PartSize, minPartSize)
	}
	if o.MaxSinglePut == 0 {
		o.MaxSinglePut = maxSinglePut
	}
	if o.MaxSinglePut < 0 || o.MaxSinglePut > maxSinglePut {
		return o, fmt.Errorf("s3: MaxSinglePut %d outside 1..%d (S3's largest PUT)", o.MaxSinglePut, int64(maxSinglePut))
	}
	return o, nil
}

// Origin is an S3-compatible origin. It is safe for concurrent use.
type Origin struct {
	core     *minio.Core
	http     *http.Client // the core's transport, for requests sent without it (blank.go)
	opts     Options
	requests atomic.Int64 // HTTP requests sent, retries included
	parts    sync.Pool    // *[]byte of opts.PartSize, for bodies of unknown size
}

var (
	_ store.Origin    = (*Origin)(nil)
	_ store.Copier    = (*Origin)(nil)
	_ store.Multipart = (*Origin)(nil)
)

// New returns an origin for opts. It does not contact the server.
func New(opts Options) (*Origin, error) {
	opts, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	o := &Origin{opts: opts}
	rt := opts.Transport
	if rt == nil {
		rt = newTransport(opts)
	}
	counted := &countingTransport{rt: rt, n: &o.requests}
	o.http = &http.Client{Transport: counted}
	core, err := minio.NewCore(opts.Endpoint, &minio.Options{
		Creds:      credentials.NewStaticV4(opts.AccessKey, opts.SecretKey, ""),
		Secure:     opts.Secure,
		Region:     opts.Region,
		Transport:  counted,
		MaxRetries: opts.MaxAttempts,
	})
	if err != nil {
		return nil, fmt.Errorf("s3: %v", err)
	}
	o.core = core
	o.parts.New = func() any { b := make([]byte, opts.PartSize); return &b }
	return o, nil
}

// Requests returns how many HTTP requests the origin has sent.
func (o *Origin) Requests() int64 { return o.requests.Load() }

// newTransport is tuned for a gateway: many idle connections per host (one
// origin, many concurrent misses), a short connect timeout so a down
// origin fails fast, and no transparent decompression (bytes are relayed
// as stored).
func newTransport(opts Options) *http.Transport {
	dial := stallconn.Dial(&net.Dialer{Timeout: opts.DialTimeout, KeepAlive: 30 * time.Second}, opts.WriteStallTimeout)
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dial,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: opts.ResponseHeaderTimeout,
		DisableCompression:    true,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: opts.RootCAs},
	}
}

// countingTransport counts requests on their way out.
type countingTransport struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(r)
}

// ListBuckets lists the origin's buckets.
func (o *Origin) ListBuckets(ctx context.Context) ([]store.BucketInfo, error) {
	bs, err := o.core.ListBuckets(ctx)
	if err != nil {
		return nil, wrap(ctx, "list buckets", "", "", err)
	}
	out := make([]store.BucketInfo, 0, len(bs))
	for _, b := range bs {
		out = append(out, store.BucketInfo{Name: b.Name, Created: b.CreationDate.UTC()})
	}
	return out, nil
}

// MakeBucket creates a bucket.
func (o *Origin) MakeBucket(ctx context.Context, bucket string) error {
	if err := s3utils.CheckValidBucketNameStrict(bucket); err != nil {
		return fmt.Errorf("%w: %q: %v", store.ErrInvalidBucketName, bucket, err)
	}
	err := o.core.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: o.opts.Region})
	return wrap(ctx, "make bucket", bucket, "", err)
}

// RemoveBucket removes an empty bucket.
func (o *Origin) RemoveBucket(ctx context.Context, bucket string) error {
	if err := checkBucket(bucket); err != nil {
		return err
	}
	return wrap(ctx, "remove bucket", bucket, "", o.core.RemoveBucket(ctx, bucket))
}

// StatBucket returns nil if the bucket exists.
func (o *Origin) StatBucket(ctx context.Context, bucket string) error {
	if err := checkBucket(bucket); err != nil {
		return err
	}
	ok, err := o.core.BucketExists(ctx, bucket)
	if err != nil {
		return wrap(ctx, "stat bucket", bucket, "", err)
	}
	if !ok {
		return fmt.Errorf("%w: %s", store.ErrNoSuchBucket, bucket)
	}
	return nil
}

// checkBucket refuses names no S3 server accepts (before minio-go refuses
// them with errors of its own).
func checkBucket(bucket string) error {
	if err := s3utils.CheckValidBucketName(bucket); err != nil {
		return fmt.Errorf("%w: %q: %v", store.ErrInvalidBucketName, bucket, err)
	}
	return nil
}

// checkNames validates a bucket and an object key. A key of white space
// only is valid (minio-go refuses it; blank.go sends what it can).
func checkNames(bucket, key string) error {
	if err := checkBucket(bucket); err != nil {
		return err
	}
	if isBlank(key) {
		return s3utils.CheckValidObjectNamePrefix(key)
	}
	if err := s3utils.CheckValidObjectName(key); err != nil {
		return fmt.Errorf("%w: %q: %v", store.ErrInvalidKey, key, err)
	}
	return nil
}
