// Package hdfs is the HDFS origin: each sub-directory of Options.Base on an
// HDFS cluster is a bucket and each file under it an object, reached
// through the pure-Go client github.com/colinmarc/hdfs/v2.
//
// Mapping and limits, documented rather than hidden:
//   - A key maps to Base/bucket/key. Keys with empty, "." or ".." segments
//     are store.ErrInvalidKey, and so is any segment starting with
//     ".granary-" (reserved: temp files and folder markers use it, and
//     listings never show it).
//   - HDFS has no ETag. An object's ETag is versionETag: a hash of its size,
//     mtime and file ID, so a file rewritten at the origin is a new version.
//     Objects completed from parts carry their S3 multipart ETag in an
//     extended attribute, valid only while the file's version is the one it
//     was recorded for.
//   - Metadata (content type, x-amz-meta-*) lives in the extended attribute
//     user.granary.meta. A namenode without xattr support stores none:
//     objects then read back with the default content type.
//   - A key ending in "/" is a folder object: its directory plus a zero-byte
//     marker file .granary-folder in it (a bare directory is only a prefix).
//   - A key cannot be both an object and a prefix of another ("a" and
//     "a/b"): the second Put fails with store.ErrInvalidKey.
//   - Put writes a temp file next to the target and renames it over the
//     target, so readers never see a partial file; Delete removes the file
//     and never prunes directories.
//   - The client has no context support: contexts bound datanode reads and
//     writes through deadlines, and namenode calls only through DialTimeout.
//   - Kerberos options are passed through to the client untested (no KDC
//     runs in the tests).
package hdfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	krb "github.com/jcmturner/gokrb5/v8/client"
	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/parts"
)

// Options configure an HDFS origin.
type Options struct {
	// Addresses are the namenodes (host:port); several for HA: the client
	// fails over among them on StandbyException or a dead connection.
	// Required.
	Addresses []string
	// Base is the absolute HDFS directory whose sub-directories are the
	// buckets. It is created if missing. Zero value: "/".
	Base string
	// User is the HDFS user to act as (SIMPLE auth). Zero value: the user
	// running the process. Ignored with Kerberos.
	User string
	// KerberosClient and KerberosServicePrincipalName ("nn/_HOST") enable
	// Kerberos; DataTransferProtection ("authentication", "integrity",
	// "privacy") secures datanode traffic. Passed through to the client;
	// not tested here (no KDC).
	KerberosClient               *krb.Client
	KerberosServicePrincipalName string
	DataTransferProtection       string
	// UseDatanodeHostname dials datanodes by hostname rather than IP.
	UseDatanodeHostname bool
	// DialTimeout bounds each TCP connect to a namenode or datanode.
	// Zero value: 10s.
	DialTimeout time.Duration
	// Replication and BlockSize of files written; zero values: the
	// cluster's defaults (both must be set to override them).
	Replication int
	BlockSize   int64
	// PartsDir is the local directory that stages multipart parts.
	// Required.
	PartsDir string
	// Clients is how many client connections the origin spreads its calls
	// over (a client sends one namenode call at a time). Zero value: 16.
	Clients int
	// Readers is how many more clients reads take one each, from open to
	// close; a read waits for a free one. Zero value: 32.
	Readers int
	// Logger receives failover and degradation reports. Zero: no logging.
	Logger zerolog.Logger
}

// Reserved names: any path segment starting with reservedPrefix is the
// origin's own and never a key.
const (
	reservedPrefix = ".granary-"
	tmpPrefix      = reservedPrefix + "tmp-"
	folderMarker   = reservedPrefix + "folder"
	dirPerm        = 0o755
	filePerm       = 0o644
)

// Origin serves the sub-directories of an HDFS directory as buckets. It is
// safe for concurrent use: the client serialises namenode calls on its one
// connection (its own lock) and every read or write has its own stream.
type Origin struct {
	pool    *pool
	base    string
	opts    Options
	log     zerolog.Logger
	uploads *parts.Store // multipart uploads, staged locally
	// noXAttrs is set once the namenode answered an xattr call as unknown:
	// metadata is then neither written nor read.
	noXAttrs atomic.Bool
}

var (
	_ store.Origin    = (*Origin)(nil)
	_ store.Multipart = (*Origin)(nil)
)

// New connects to the namenodes and opens (creating if needed) Base.
func New(opts Options) (*Origin, error) {
	if len(opts.Addresses) == 0 {
		return nil, errors.New("hdfs: Options.Addresses is required")
	}
	if opts.PartsDir == "" {
		return nil, errors.New("hdfs: Options.PartsDir is required")
	}
	base := path.Clean("/" + opts.Base)
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 10 * time.Second
	}
	if opts.User == "" && opts.KerberosClient == nil {
		opts.User = currentUser()
	}
	if opts.Clients <= 0 {
		opts.Clients = defaultClients
	}
	if opts.Readers <= 0 {
		opts.Readers = defaultReaders
	}
	pl, err := newPool(opts)
	if err != nil {
		return nil, wrap("connect", "", "", err, nil)
	}
	c := pl.pick().c
	if err := c.MkdirAll(base, dirPerm); err != nil {
		pl.close()
		return nil, wrap("create base", base, "", err, nil)
	}
	uploads, err := parts.Open(parts.Options{Dir: opts.PartsDir})
	if err != nil {
		pl.close()
		return nil, fmt.Errorf("hdfs: open parts dir: %w", err)
	}
	return &Origin{pool: pl, base: base, opts: opts, log: opts.Logger, uploads: uploads}, nil
}

// currentUser is the name of the user running the process, or "granary".
func currentUser() string {
	for _, v := range []string{"HADOOP_USER_NAME", "USER"} {
		if u := os.Getenv(v); u != "" {
			return u
		}
	}
	return "granary"
}

// Close releases the client (and its file leases) and the parts store.
func (o *Origin) Close() error {
	o.uploads.Close()
	return o.pool.close()
}

// bucketPath returns the HDFS path of a bucket (already validated).
func (o *Origin) bucketPath(bucket string) string { return path.Join(o.base, bucket) }

// keyPath returns the HDFS path of a key (already validated), without a
// trailing slash.
func (o *Origin) keyPath(bucket, key string) string {
	return o.bucketPath(bucket) + "/" + strings.TrimSuffix(key, "/")
}

// ListBuckets lists the valid-named directories of Base, by name.
func (o *Origin) ListBuckets(ctx context.Context) ([]store.BucketInfo, error) {
	fis, err := o.cl().ReadDir(o.base)
	if err != nil {
		return nil, wrap("list buckets", "", "", err, nil)
	}
	var out []store.BucketInfo
	for _, fi := range fis {
		if fi.IsDir() && store.CheckBucketName(fi.Name()) == nil {
			out = append(out, store.BucketInfo{Name: fi.Name(), Created: fi.ModTime().UTC()})
		}
	}
	slices.SortFunc(out, func(a, b store.BucketInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// MakeBucket creates the bucket directory.
func (o *Origin) MakeBucket(ctx context.Context, bucket string) error {
	if err := store.CheckBucketName(bucket); err != nil {
		return err
	}
	err := o.cl().Mkdir(o.bucketPath(bucket), dirPerm)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%w: %s", store.ErrBucketExists, bucket)
	}
	return wrap("make bucket", bucket, "", err, nil)
}

// StatBucket returns nil if the bucket directory exists.
func (o *Origin) StatBucket(ctx context.Context, bucket string) error {
	if err := store.CheckBucketName(bucket); err != nil {
		return err
	}
	fi, err := o.cl().Stat(o.bucketPath(bucket))
	if err == nil && !fi.IsDir() {
		err = os.ErrNotExist
	}
	return wrap("stat bucket", bucket, "", err, store.ErrNoSuchBucket)
}

// RemoveBucket removes a bucket that holds no object (empty directories
// and stale temp files do not count), then aborts its multipart uploads.
// A Put racing the removal may land in the removed tree; HDFS offers no
// lock to prevent it.
func (o *Origin) RemoveBucket(ctx context.Context, bucket string) error {
	if err := o.StatBucket(ctx, bucket); err != nil {
		return err
	}
	has, err := hasObject(ctx, o.dirReader(bucket))
	if err != nil {
		return wrap("remove bucket", bucket, "", err, store.ErrNoSuchBucket)
	}
	if has {
		return fmt.Errorf("%w: %s", store.ErrBucketNotEmpty, bucket)
	}
	if err := o.cl().RemoveAll(o.bucketPath(bucket)); err != nil {
		return wrap("remove bucket", bucket, "", err, store.ErrNoSuchBucket)
	}
	return o.uploads.AbortBucket(bucket)
}
