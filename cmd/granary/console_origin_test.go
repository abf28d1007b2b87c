// The console's origin panel: a missing key's 404 is no failure of the
// origin; when the origin goes down, a banner over the page says so, in
// words, and the state shown is status's.
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

// originWindow is the page's origin traffic of the last five minutes.
const originWindow = `document.querySelector('#origin tr[data-origin-window="300"] td')`

// checkNotFoundIsNoFailure asks for a key the origin does not have: the
// origin's answer shows as a request sent, not as a failed call.
func (r *consoleRig) checkNotFoundIsNoFailure(tab context.Context, cl *minio.Client) {
	sent := regexp.MustCompile(`(\d+) requests? sent, 0 calls failed`)
	before := eval[string](r, tab, originWindow+`.textContent`)
	m := sent.FindStringSubmatch(before)
	if m == nil {
		r.t.Fatalf("the origin's traffic reads %q", before)
	}
	_, err := cl.StatObject(context.Background(), shownBucket, "no-such-key-404", minio.StatObjectOptions{})
	if minio.ToErrorResponse(err).Code != "NoSuchKey" {
		r.t.Fatalf("a missing key: %v", err)
	}
	r.do(tab, "the 404 is counted as a request", waitJS(`((m) => m !== null && +m[1] > `+m[1]+`)(
		`+originWindow+`.textContent.match(/(\d+) requests? sent, 0 calls failed/)) && `+originWindow+`.className === ''`))
}

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
