// Package fuse maps a bucket (or a prefix of it) of any S3 endpoint, a
// Granary node first of all, to a POSIX directory through the kernel's
// FUSE, for training code that reads files. It talks S3 through minio-go
// and imports none of Granary's server packages.
package fuse

import (
	"crypto/x509"
	"os"
	"sync"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/rs/zerolog"
)

// Options configure a mount.
type Options struct {
	// Endpoint is the S3 endpoint, http://HOST:PORT or https://HOST:PORT.
	Endpoint  string
	AccessKey string
	SecretKey string
	Region    string // "" means us-east-1
	// RootCAs, if set, verify an https Endpoint (a private CA); nil
	// means the system's.
	RootCAs *x509.CertPool
	Bucket  string
	// ViaEndpointOnly reads every chunk through Endpoint. Otherwise, when
	// Endpoint is a member of a Granary cluster, each chunk is read from
	// the member that owns it (owners.go): one hop per read.
	ViaEndpointOnly bool
	// Prefix, if set, is the key prefix shown as the mount's root
	// (a trailing "/" is implied).
	Prefix string
	// ReadOnly refuses every change with EROFS. Otherwise files can be
	// created, written (staged in StageDir, uploaded on close and
	// fsync), renamed and deleted, and directories made and removed.
	ReadOnly bool
	// AllowOther lets users other than the one mounting use the mount
	// (FUSE's allow_other): a sidecar mounting as root for a trainer
	// that runs as another user. Only root may set it unless
	// /etc/fuse.conf says user_allow_other.
	AllowOther bool
	// UID and GID own every file; FileMode and DirMode are their
	// permission bits. Zero values: the mounting process's IDs, 0644, 0755.
	UID, GID          uint32
	FileMode, DirMode os.FileMode
	// MetadataTTL is how long listings and attributes are cached, and the
	// entry and attribute timeouts handed to the kernel; 0 means 1m.
	MetadataTTL time.Duration
	// MaxMemory bounds all read-ahead buffers together; past it,
	// readers wait. 0 means 256 MiB. Writes are staged on disk
	// (StageDir) and streamed from there, never held in memory.
	MaxMemory int64
	// StageDir is where files open for writing are staged until
	// uploaded; "" means os.TempDir(). It needs room for the largest
	// files written at once.
	StageDir string
	// Session, if set, serves a supervisor's connection (see Connect)
	// in place of mounting: the kernel's node ids and handles outlive
	// this process.
	Session *Session
	// Debug logs every FUSE operation.
	Debug  bool
	Logger zerolog.Logger
}

// Server is a mounted bucket.
type Server struct {
	srv  *fuse.Server
	dir  string
	fsys *filesys
	// served is closed when the serve loop ends: the kernel has let go
	// of the mount.
	served chan struct{}

	once sync.Once // runs the unmount once
	err  error     // the unmount's result
}
