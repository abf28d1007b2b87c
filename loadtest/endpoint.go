// Measuring any S3 endpoint (-endpoint): Granary or not, MinIO directly,
// a cloud bucket. The load test then starts no server of its own; the
// reads scenario writes its data set under -prefix in -bucket (or, with
// -reuse, reads the one a previous run wrote there) and reads it back,
// verifying every byte, with the endpoint as its only target.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// endpointOptions are -endpoint and its companions. The zero value
// measures no endpoint.
type endpointOptions struct {
	url    string // http(s)://host:port, no path
	bucket string
	prefix string // every key of the data set is under it
	reuse  bool   // the data set is there already: read without writing
	// access, secret and region come from the environment (check).
	access, secret, region string
}

// endpointFlags declares the flags that fill e.
func endpointFlags(e *endpointOptions) {
	flag.StringVar(&e.url, "endpoint", "", "measure the S3 endpoint at this URL (http://host:port or https://) alone, starting no server; "+
		"credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, else GRANARY_ACCESS_KEY/GRANARY_SECRET_KEY (or their _FILE forms); "+
		"region from AWS_REGION (default us-east-1); only the scenarios that take it (see -scenario)")
	flag.StringVar(&e.bucket, "bucket", "", "with -endpoint: the bucket the data set is written to and read from (created when missing)")
	flag.StringVar(&e.prefix, "prefix", "loadtest/", "with -endpoint: the prefix every key of the data set is under")
	flag.BoolVar(&e.reuse, "reuse", false, "with -endpoint: read the data set a previous run (same -quick) wrote under -prefix, without writing it")
}

// check validates e once the flags are parsed and reads the credentials
// through lookup (os.LookupEnv). granary is the -granary flag, which an
// endpoint excludes.
func (e *endpointOptions) check(lookup func(string) (string, bool), granary string) error {
	if e.url == "" {
		return nil
	}
	if granary != "" {
		return errors.New("-endpoint measures the endpoint alone and starts no granary: drop -granary")
	}
	u, err := url.Parse(e.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "" {
		return fmt.Errorf("-endpoint %q: want http://host:port or https://host:port", e.url)
	}
	e.url = u.Scheme + "://" + u.Host
	if e.bucket == "" {
		return errors.New("-endpoint needs -bucket: where the data set is written and read")
	}
	if e.access, e.secret, err = endpointCredentials(lookup); err != nil {
		return err
	}
	e.region = "us-east-1"
	if r, ok := lookup("AWS_REGION"); ok && r != "" {
		e.region = r
	}
	return nil
}

// endpointCredentials reads the endpoint's keys: AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY when either is set, else GRANARY_ACCESS_KEY and
// GRANARY_SECRET_KEY, each of those from its _FILE variable when set, as
// granary serve reads them (cmd/granary/credentials.go).
func endpointCredentials(lookup func(string) (string, bool)) (access, secret string, err error) {
	a, _ := lookup("AWS_ACCESS_KEY_ID")
	s, _ := lookup("AWS_SECRET_ACCESS_KEY")
	if a != "" || s != "" {
		if a == "" || s == "" {
			return "", "", errors.New("-endpoint: set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
		}
		return a, s, nil
	}
	if a, err = envOrFile(lookup, "GRANARY_ACCESS_KEY"); err == nil {
		s, err = envOrFile(lookup, "GRANARY_SECRET_KEY")
	}
	if err != nil {
		return "", "", fmt.Errorf("-endpoint: %w", err)
	}
	if a == "" || s == "" {
		return "", "", errors.New("-endpoint needs credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or GRANARY_ACCESS_KEY and GRANARY_SECRET_KEY")
	}
	return a, s, nil
}

// envOrFile is the variable name, or the trimmed contents of the file
// that name_FILE names; "" when neither is set.
func envOrFile(lookup func(string) (string, bool), name string) (string, error) {
	if v, ok := lookup(name); ok && v != "" {
		return v, nil
	}
	path, ok := lookup(name + "_FILE")
	if !ok || path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s_FILE: %w", name, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// target is the endpoint as the reads scenario measures it: named by its
// URL, read once per set with signed GETs, compared with nothing.
func (e endpointOptions) target() target {
	return target{name: e.url, endpoint: e.url, access: e.access, secret: e.secret, region: e.region,
		targetKind: targetKind{remote: true}}
}

// s3Client is a minio-go client of the endpoint, path-style as the load
// client reads it.
func (e endpointOptions) s3Client() (*minio.Client, error) {
	u, err := url.Parse(e.url)
	if err != nil {
		return nil, err
	}
	return minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(e.access, e.secret, ""),
		Secure: u.Scheme == "https", Region: e.region, BucketLookup: minio.BucketLookupPath})
}

// readEndpoint writes d under the endpoint's prefix (unless -reuse) and
// measures the endpoint alone into rep.
func readEndpoint(ctx context.Context, e endpointOptions, d *dataset, rep *report, logf func(string, ...any)) (*report, error) {
	d.bucket = e.bucket
	d.under(e.prefix)
	if !e.reuse {
		if err := seedEndpoint(ctx, e, d, logf); err != nil {
			return nil, err
		}
	}
	rep.targets = []target{e.target()}
	rep.loadStart = loadAverage()
	if err := measure(ctx, d, rep.targets, rep, logf); err != nil {
		if e.reuse {
			err = fmt.Errorf("%w (-reuse reads the data set a run with the same -quick wrote under -prefix %q)", err, e.prefix)
		}
		return nil, err
	}
	rep.loadEnd = loadAverage()
	return rep, nil
}

// seedEndpoint creates the bucket if it is missing and writes d into it.
func seedEndpoint(ctx context.Context, e endpointOptions, d *dataset, logf func(string, ...any)) error {
	cl, err := e.s3Client()
	if err != nil {
		return err
	}
	ok, err := cl.BucketExists(ctx, d.bucket)
	if err != nil {
		return fmt.Errorf("bucket %s: %w", d.bucket, err)
	}
	if !ok {
		if err := cl.MakeBucket(ctx, d.bucket, minio.MakeBucketOptions{Region: e.region}); err != nil {
			return fmt.Errorf("make bucket %s: %w", d.bucket, err)
		}
	}
	t0 := time.Now()
	if err := d.upload(ctx, cl, 16); err != nil {
		return err
	}
	logf("wrote %d objects under %s/%s in %v", len(d.all()), d.bucket, e.prefix, time.Since(t0).Round(time.Millisecond))
	return nil
}
