// Parsing of the --origin URL and of the origin's credentials.
package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// originSpec is a parsed --origin value.
type originSpec struct {
	Scheme string // "file", "s3" or "hdfs"
	// Dir is the root directory of a file origin (absolute, clean);
	// Private makes what it writes there the node's alone (fs.Options).
	Dir     string
	Private bool
	// Endpoint (host or host:port), Secure and Region address an s3 origin.
	Endpoint string
	Secure   bool
	Region   string
	// PayloadCRC32C sends an s3 origin's upload bodies with a trailing
	// CRC32C instead of signed (payload=crc32c; s3.Options).
	PayloadCRC32C bool
	// CAFile, if set, holds the CA an https s3 origin is verified against.
	CAFile string
	// Namenodes (host:port) and Base (absolute) address an hdfs origin;
	// PartsDir is where it stages multipart parts.
	Namenodes []string
	Base      string
	PartsDir  string
}

// parseOrigin parses file:///ABS/DIR or
// s3://HOST[:PORT][?secure=BOOL&region=R&payload=signed|crc32c].
// An s3 origin is secure (HTTPS) unless secure=false is given.
func parseOrigin(raw string) (originSpec, error) {
	if strings.HasPrefix(raw, "hdfs://") {
		// Several comma-separated namenodes are not a URL host.
		return parseHDFSOrigin(raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return originSpec{}, fmt.Errorf("origin: %q is not a URL: %w", raw, err)
	}
	switch u.Scheme {
	case "file":
		return parseFileOrigin(raw, u)
	case "s3":
		return parseS3Origin(raw, u)
	case "":
		return originSpec{}, fmt.Errorf("origin: %q has no scheme; want file:///ABS/DIR, s3://HOST:PORT or hdfs://NN:8020/BASE", raw)
	default:
		return originSpec{}, fmt.Errorf("origin: unknown scheme %q in %q; want file, s3 or hdfs", u.Scheme, raw)
	}
}

func parseFileOrigin(raw string, u *url.URL) (originSpec, error) {
	if u.Host != "" && u.Host != "localhost" {
		return originSpec{}, fmt.Errorf("origin: %q names host %q; a file origin is file:///ABS/DIR (three slashes)", raw, u.Host)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return originSpec{}, fmt.Errorf("origin: %q: a file origin takes no query or fragment", raw)
	}
	p := filepath.FromSlash(u.Path)
	if !filepath.IsAbs(p) {
		return originSpec{}, fmt.Errorf("origin: %q needs an absolute path (file:///ABS/DIR)", raw)
	}
	return originSpec{Scheme: "file", Dir: filepath.Clean(p)}, nil
}

func parseS3Origin(raw string, u *url.URL) (originSpec, error) {
	if u.User != nil {
		return originSpec{}, errors.New("origin: credentials do not belong in the origin URL; set GRANARY_ORIGIN_ACCESS_KEY and GRANARY_ORIGIN_SECRET_KEY")
	}
	if u.Host == "" || u.Hostname() == "" {
		return originSpec{}, fmt.Errorf("origin: %q has no host; want s3://HOST:PORT", raw)
	}
	if port := u.Port(); port != "" {
		if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
			return originSpec{}, fmt.Errorf("origin: bad port %q in %q", port, raw)
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return originSpec{}, fmt.Errorf("origin: empty port in %q", raw)
	}
	if (u.Path != "" && u.Path != "/") || u.Fragment != "" {
		return originSpec{}, fmt.Errorf("origin: %q: an s3 origin is s3://HOST:PORT with no path (buckets map one to one)", raw)
	}
	spec := originSpec{Scheme: "s3", Endpoint: u.Host, Secure: true}
	for name, vals := range u.Query() {
		v := vals[len(vals)-1]
		switch name {
		case "secure":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return originSpec{}, fmt.Errorf("origin: secure=%q in %q is not true or false", v, raw)
			}
			spec.Secure = b
		case "region":
			spec.Region = v
		case "payload":
			switch v {
			case "signed", "crc32c":
				spec.PayloadCRC32C = v == "crc32c"
			default:
				return originSpec{}, fmt.Errorf("origin: payload=%q in %q is not signed or crc32c", v, raw)
			}
		default:
			return originSpec{}, fmt.Errorf("origin: unknown parameter %q in %q (known: secure, region, payload)", name, raw)
		}
	}
	return spec, nil
}

// endpointHostPort is the origin endpoint with its port made explicit.
func (s originSpec) endpointHostPort() string {
	if _, _, err := net.SplitHostPort(s.Endpoint); err == nil {
		return s.Endpoint
	}
	if s.Secure {
		return net.JoinHostPort(s.Endpoint, "443")
	}
	return net.JoinHostPort(s.Endpoint, "80")
}

// originCredentials reads the origin's access and secret key from
// GRANARY_ORIGIN_ACCESS_KEY / GRANARY_ORIGIN_SECRET_KEY, or from the files
// named by the same names with _FILE appended. Both empty means anonymous
// access. Values are never logged.
func originCredentials(getenv Getenv) (access, secret string, err error) {
	if access, err = secretFromEnv(getenv, "GRANARY_ORIGIN_ACCESS_KEY"); err != nil {
		return "", "", err
	}
	if secret, err = secretFromEnv(getenv, "GRANARY_ORIGIN_SECRET_KEY"); err != nil {
		return "", "", err
	}
	if (access == "") != (secret == "") {
		return "", "", errors.New("origin credentials: set both the access key and the secret key (GRANARY_ORIGIN_ACCESS_KEY[_FILE] and GRANARY_ORIGIN_SECRET_KEY[_FILE]) or neither")
	}
	return access, secret, nil
}

// secretFromEnv returns the value of name, or the content of the file
// named by name_FILE (trailing whitespace trimmed). Setting both is an
// error, since one of them would be silently ignored.
func secretFromEnv(getenv Getenv, name string) (string, error) {
	v, _ := getenv(name)
	file, _ := getenv(name + "_FILE")
	switch {
	case v != "" && file != "":
		return "", fmt.Errorf("%s and %s_FILE are both set; set one", name, name)
	case file != "":
		v, err := readSecretFile(file)
		if err != nil {
			return "", fmt.Errorf("%s_FILE: %w", name, err)
		}
		return v, nil
	}
	return v, nil
}

// readSecretFile returns the secret a file holds, without the line end
// an editor or `echo` leaves.
func readSecretFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(data), " \t\r\n"), nil
}
