// Tests of --origin parsing and of origin credentials.
package main

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseOriginGood(t *testing.T) {
	cases := map[string]originSpec{
		"file:///srv/data":                                  {Scheme: "file", Dir: "/srv/data"},
		"file:///srv/data/../x/":                            {Scheme: "file", Dir: "/srv/x"},
		"file://localhost/srv/data":                         {Scheme: "file", Dir: "/srv/data"},
		"file:///dir%20with%20space":                        {Scheme: "file", Dir: "/dir with space"},
		"s3://127.0.0.1:9000?secure=false&region=us-east-1": {Scheme: "s3", Endpoint: "127.0.0.1:9000", Region: "us-east-1"},
		"s3://minio.internal:9000":                          {Scheme: "s3", Endpoint: "minio.internal:9000", Secure: true},
		"s3://s3.amazonaws.com?region=eu-west-1":            {Scheme: "s3", Endpoint: "s3.amazonaws.com", Secure: true, Region: "eu-west-1"},
		"s3://[::1]:9000/?secure=0":                         {Scheme: "s3", Endpoint: "[::1]:9000"},
		"s3://minio:9000?secure=false&payload=crc32c":       {Scheme: "s3", Endpoint: "minio:9000", PayloadCRC32C: true},
		"s3://minio:9000?payload=signed":                    {Scheme: "s3", Endpoint: "minio:9000", Secure: true},
		"hdfs://namenode:8020":                              {Scheme: "hdfs", Namenodes: []string{"namenode:8020"}, Base: "/"},
		"hdfs://nn1:8020,nn2:9000/data/train/":              {Scheme: "hdfs", Namenodes: []string{"nn1:8020", "nn2:9000"}, Base: "/data/train"},
		"hdfs://nn1/a/../b":                                 {Scheme: "hdfs", Namenodes: []string{"nn1:8020"}, Base: "/b"},
	}
	for in, want := range cases {
		got, err := parseOrigin(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("parseOrigin(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
}

func TestParseOriginBad(t *testing.T) {
	cases := map[string]string{
		"":                                  "no scheme",
		"/srv/data":                         "no scheme",
		"ftp://host/x":                      "unknown scheme",
		"hdfs://nn1:8020,,nn2:8020/x":       "empty namenode",
		"hdfs:///x":                         "empty namenode",
		"hdfs://nn:70000/x":                 "bad namenode",
		"hdfs://nn:8020/x?user=a":           "no query",
		"file://data":                       "names host",
		"file:relative":                     "absolute path",
		"file:///srv?x=1":                   "no query",
		"s3://":                             "no host",
		"s3://:9000":                        "no host",
		"s3://host:":                        "empty port",
		"s3://host:http":                    "not a URL",
		"s3://host:70000":                   "bad port",
		"s3://host:9000/bucket":             "no path",
		"s3://host:9000?secure=maybe":       "not true or false",
		"s3://host:9000?insecure=1":         "unknown parameter",
		"s3://host:9000?payload=sha1":       "not signed or crc32c",
		"s3://user:hunter2@host:9000":       "do not belong",
		"s3://host:9000#frag":               "no path",
		"s3://host name:9000":               "not a URL",
		"file:///srv\x00":                   "not a URL",
		"s3://host:9000?secure=true&sig=v2": "unknown parameter",
	}
	for in, want := range cases {
		_, err := parseOrigin(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseOrigin(%q): error %v, want one containing %q", in, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("parseOrigin(%q): error %q repeats the password", in, err)
		}
	}
}

func TestEndpointHostPort(t *testing.T) {
	cases := []struct {
		spec originSpec
		want string
	}{
		{originSpec{Endpoint: "h:9000"}, "h:9000"},
		{originSpec{Endpoint: "h", Secure: true}, "h:443"},
		{originSpec{Endpoint: "h"}, "h:80"},
		{originSpec{Endpoint: "[::1]:9000"}, "[::1]:9000"},
		{originSpec{Endpoint: "example.com", Secure: true}, "example.com:443"},
	}
	for _, c := range cases {
		if got := c.spec.endpointHostPort(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.spec, got, c.want)
		}
	}
}

func TestOriginCredentials(t *testing.T) {
	dir := t.TempDir()
	akFile := writeFile(t, dir, "ak", "FILEACCESS\n")
	skFile := writeFile(t, dir, "sk", "file-secret \n")
	cases := []struct {
		env        map[string]string
		ak, sk     string
		wantErrSub string
	}{
		{env: nil},
		{env: map[string]string{"GRANARY_ORIGIN_ACCESS_KEY": "A", "GRANARY_ORIGIN_SECRET_KEY": "S"}, ak: "A", sk: "S"},
		{env: map[string]string{"GRANARY_ORIGIN_ACCESS_KEY_FILE": akFile, "GRANARY_ORIGIN_SECRET_KEY_FILE": skFile}, ak: "FILEACCESS", sk: "file-secret"},
		{env: map[string]string{"GRANARY_ORIGIN_ACCESS_KEY": "A", "GRANARY_ORIGIN_SECRET_KEY_FILE": skFile}, ak: "A", sk: "file-secret"},
		{env: map[string]string{"GRANARY_ORIGIN_ACCESS_KEY": "A"}, wantErrSub: "both"},
		{env: map[string]string{"GRANARY_ORIGIN_ACCESS_KEY": "A", "GRANARY_ORIGIN_ACCESS_KEY_FILE": akFile, "GRANARY_ORIGIN_SECRET_KEY": "S"}, wantErrSub: "set one"},
		{env: map[string]string{"GRANARY_ORIGIN_ACCESS_KEY": "A", "GRANARY_ORIGIN_SECRET_KEY_FILE": filepath.Join(dir, "missing")}, wantErrSub: "GRANARY_ORIGIN_SECRET_KEY_FILE"},
	}
	for i, tc := range cases {
		ak, sk, err := originCredentials(envMap(tc.env))
		if tc.wantErrSub != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErrSub) {
				t.Errorf("case %d: error %v, want %q", i, err, tc.wantErrSub)
			}
			continue
		}
		if err != nil || ak != tc.ak || sk != tc.sk {
			t.Errorf("case %d: %q %q %v; want %q %q", i, ak, sk, err, tc.ak, tc.sk)
		}
	}
}
