// Scaffolding the scenarios share: a seeded MinIO, alone or behind the slow
// proxy, and a run's measurements taken between two readings of the load
// average, with the report so far logged when they fail part way.
package main

import (
	"context"

	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/internal/slowproxy"
)

// seedSlowOrigin seeds mio with d and starts the slow proxy (link slow)
// in front of it: the scenario's origin. The caller closes the proxy
// before it stops mio.
func seedSlowOrigin(ctx context.Context, d *dataset, mio *miniotest.Server, slow slowproxy.Options, logf func(string, ...any)) (*slowproxy.Proxy, error) {
	if err := seedMinio(ctx, d, mio, logf); err != nil {
		return nil, err
	}
	return slowproxy.Start(mio.Endpoint, slow)
}

// seededMinio starts MinIO and seeds it with d; the caller stops it.
func seededMinio(ctx context.Context, d *dataset, logf func(string, ...any)) (*miniotest.Server, error) {
	mio, err := startMinio()
	if err != nil {
		return nil, err
	}
	if err := seedMinio(ctx, d, mio, logf); err != nil {
		mio.Stop()
		return nil, err
	}
	return mio, nil
}

// measureLogged runs measure between two readings of the load average,
// stored in *loadStart and *loadEnd. When measure fails after some rows
// were measured (measured says whether any were), *loadEnd is read too
// and the report so far (markdown) is logged before measure's error is
// returned; with no rows, the error alone.
func measureLogged(loadStart, loadEnd *string, measure func() error, measured func() bool, markdown func() string, logf func(string, ...any)) error {
	*loadStart = loadAverage()
	err := measure()
	if err != nil && !measured() {
		return err
	}
	*loadEnd = loadAverage()
	if err != nil {
		logf("partial report before the failure:\n%s", markdown())
	}
	return err
}
