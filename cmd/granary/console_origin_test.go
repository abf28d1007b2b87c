// The console's origin panel when the origin goes down: a banner over
// the page says so, in words, and the state shown is status's.
package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/store"
)

// rawTime is a timestamp as JSON carries it, which the page must not show.
var rawTime = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d`)

// checkOriginDown kills the origin, reads through the node until its
// status says the origin is down, and waits for the page's banner.
func (r *consoleRig) checkOriginDown(tab context.Context, mio *miniotest.Server, cl *minio.Client) {
	mio.Kill()
	eventually(r.t, "the node sees its origin down", func() error {
		_, err := cl.StatObject(context.Background(), shownBucket, "never-cached", minio.StatObjectOptions{})
		if err == nil {
			return errors.New("a dead origin answered")
		}
		if o := r.status().Origin; o == nil || o.State != store.HealthDown {
			return fmt.Errorf("origin: %+v", o)
		}
		return nil
	})
	r.do(tab, "the banner shows", waitJS(`!document.getElementById('origin-banner').hidden &&
		document.querySelector('#origin tr[data-origin="state"] td').dataset.value === 'down'`))
	r.shot(tab, "origin-down")
	banner := eval[string](r, tab, `document.getElementById('origin-banner').textContent`)
	panel := eval[string](r, tab, `document.getElementById('origin').textContent`)
	if !strings.Contains(banner, "is down") || !strings.Contains(banner, "Cached data is still served") || rawTime.MatchString(banner+panel) {
		r.t.Fatalf("banner %q, panel %q", banner, panel)
	}
}
