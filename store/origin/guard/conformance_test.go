// The origin conformance suite through the guard, over the s3 and the
// directory origins: a healthy origin behind the guard behaves as the
// origin does, every optional ability (copy, multipart, tags, part
// ranges) included.
package guard

import (
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/origin/fs"
	"github.com/granary-dev/granary/store/origin/s3"
	"github.com/granary-dev/granary/store/storetest"
)

// guardOver guards inner with a bound no healthy call on a busy machine
// reaches.
func guardOver(t *testing.T, inner store.Origin) store.Origin {
	t.Helper()
	g, err := New(Options{Origin: inner, Name: "conformance", Timeout: time.Minute, ProbeInterval: time.Second,
		Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g.Origin()
}

func TestConformanceS3(t *testing.T) {
	storetest.RunOrigin(t, func(t *testing.T) store.Origin {
		inner, err := s3.New(s3.Options{Endpoint: minio.Endpoint, AccessKey: minio.AccessKey, SecretKey: minio.SecretKey,
			PartSize: 5 << 20})
		if err != nil {
			t.Fatal(err)
		}
		return guardOver(t, inner)
	})
}

func TestConformanceDirectory(t *testing.T) {
	storetest.RunOrigin(t, func(t *testing.T) store.Origin {
		inner, err := fs.New(fs.Options{Root: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		return guardOver(t, inner)
	})
}
