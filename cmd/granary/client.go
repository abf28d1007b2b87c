// The pattern every client subcommand (version, warm, status, flush, pin,
// mount) shares: --endpoint URL and --ca-file (each over its environment
// variable) plus credentials from GRANARY_ACCESS_KEY and
// GRANARY_SECRET_KEY (or the AWS_* pair), turned into the node it reaches and a minio-go
// client of it.
package main

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/spf13/pflag"
)

// defaultEndpoint is where `granary serve` listens with no configuration.
const defaultEndpoint = "http://127.0.0.1:9000"

// clientFlags are the flags of a client subcommand; each one, when
// given, beats its environment variable.
type clientFlags struct {
	endpoint string
	caFile   string
}

// register adds --endpoint and --ca-file to fs.
func (c *clientFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.endpoint, "endpoint", "",
		"`URL` of a Granary node, http://HOST:PORT or https://HOST:PORT (default "+defaultEndpoint+") [env GRANARY_ENDPOINT]; "+
			"credentials come from GRANARY_ACCESS_KEY and GRANARY_SECRET_KEY (or their _FILE variants), else AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	fs.StringVar(&c.caFile, "ca-file", "",
		"PEM CA `file` an https endpoint's certificate is verified against, beside the system's pool [env GRANARY_CA_FILE]")
}

// Endpoint returns the endpoint URL: the flag, else GRANARY_ENDPOINT, else
// the default, checked and without a trailing slash.
func (c *clientFlags) Endpoint(getenv Getenv) (string, error) {
	raw := c.endpoint
	if raw == "" {
		raw, _ = getenv("GRANARY_ENDPOINT")
	}
	if raw == "" {
		raw = defaultEndpoint
	}
	if _, _, err := parseEndpoint(raw); err != nil {
		return "", err
	}
	return strings.TrimRight(raw, "/"), nil
}

// parseEndpoint splits an http(s) base URL into host[:port] and whether it
// uses TLS. Paths, queries and user info are refused: the S3 API lives at
// the root of a node.
func parseEndpoint(raw string) (host string, secure bool, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", false, fmt.Errorf("endpoint %q: %w", raw, err)
	}
	switch u.Scheme {
	case "http":
	case "https":
		secure = true
	default:
		return "", false, fmt.Errorf("endpoint %q: want http://HOST:PORT or https://HOST:PORT", raw)
	}
	if u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", false, fmt.Errorf("endpoint %q: want a bare http(s)://HOST:PORT", raw)
	}
	return u.Host, secure, nil
}

// remote is the node a client command reaches: its base URL (checked, no
// trailing slash) and the pool its HTTPS certificate is verified against
// (nil: the system's).
type remote struct {
	url string
	cas *x509.CertPool
}

// Remote resolves the endpoint (see Endpoint) and the CAs (see CAs).
func (c *clientFlags) Remote(getenv Getenv) (remote, error) {
	endpoint, err := c.Endpoint(getenv)
	if err != nil {
		return remote{}, err
	}
	cas, err := c.CAs(getenv)
	if err != nil {
		return remote{}, err
	}
	return remote{url: endpoint, cas: cas}, nil
}

// transport is a fresh HTTP transport to r: the default one, verifying
// HTTPS against r's pool.
func (r remote) transport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = clientTLSConfig(r.cas)
	return tr
}

// Client returns a minio-go client for the endpoint, signed with the
// credentials in the environment (region GRANARY_REGION, else us-east-1).
func (c *clientFlags) Client(getenv Getenv) (*minio.Client, error) {
	r, err := c.Remote(getenv)
	if err != nil {
		return nil, err
	}
	return r.s3Client(getenv)
}

// s3Client builds a minio-go client of r from the environment's
// GRANARY_ACCESS_KEY / GRANARY_SECRET_KEY.
func (r remote) s3Client(getenv Getenv) (*minio.Client, error) {
	return r.s3ClientOver(getenv, r.transport())
}

// s3ClientOver is s3Client over tr (from r.transport(), tuned by the
// caller: `bench` keeps more idle connections).
func (r remote) s3ClientOver(getenv Getenv, tr *http.Transport) (*minio.Client, error) {
	host, secure, err := parseEndpoint(r.url)
	if err != nil {
		return nil, err
	}
	c, err := clientCredentials(getenv)
	if err != nil {
		return nil, err
	}
	return minio.New(host, &minio.Options{
		Creds:     credentials.NewStaticV4(c.access, c.secret, ""),
		Secure:    secure,
		Region:    c.region,
		Transport: tr,
	})
}

// clientCreds are what a client subcommand signs with.
type clientCreds struct{ access, secret, region string }

// clientCredentials reads GRANARY_ACCESS_KEY and GRANARY_SECRET_KEY (or
// their _FILE variants), else AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY
// (what the node's banner exports for aws and boto3), and the region
// from GRANARY_REGION, else AWS_REGION or AWS_DEFAULT_REGION, else
// us-east-1. A pair is taken whole from one family, never mixed.
func clientCredentials(getenv Getenv) (clientCreds, error) {
	ak, err := secretFromEnv(getenv, "GRANARY_ACCESS_KEY")
	if err != nil {
		return clientCreds{}, err
	}
	sk, err := secretFromEnv(getenv, "GRANARY_SECRET_KEY")
	if err != nil {
		return clientCreds{}, err
	}
	if ak == "" && sk == "" {
		ak, _ = getenv("AWS_ACCESS_KEY_ID")
		sk, _ = getenv("AWS_SECRET_ACCESS_KEY")
	}
	if ak == "" || sk == "" {
		return clientCreds{}, errors.New("set GRANARY_ACCESS_KEY and GRANARY_SECRET_KEY, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY " +
			"(granary serve prints them at start; generated ones are in <data-dir>/credentials)")
	}
	region := "us-east-1"
	for _, name := range []string{"GRANARY_REGION", "AWS_REGION", "AWS_DEFAULT_REGION"} {
		if v, _ := getenv(name); v != "" {
			region = v
			break
		}
	}
	return clientCreds{access: ak, secret: sk, region: region}, nil
}
