// The start-up banner and the node's key pair: the secret is printed only
// by the start that generated it, and keys out of bounds stop the start
// with an error naming the setting they came from.
package main

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/granary-dev/granary/access"
)

// TestSecretPrintedOnce: the first start on an empty data directory prints
// the secret it generated; a restart names the access key and the file but
// not the secret; a node whose secret is in the environment (or a file it
// names) never prints it.
func TestSecretPrintedOnce(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"GRANARY_DATA_DIR": dir}
	first := startServe(t, env)
	creds, err := readCredentialsFile(filepath.Join(dir, credentialsFile))
	if err != nil {
		t.Fatal(err)
	}
	if out := first.stderr.String(); !strings.Contains(out, "AWS_SECRET_ACCESS_KEY="+creds.SecretKey) {
		t.Fatalf("the generating start does not show the secret:\n%s", out)
	}
	first.stop(t)

	again := startServe(t, env)
	out := again.stderr.String()
	if strings.Contains(out, creds.SecretKey) {
		t.Fatalf("a restart printed the secret again:\n%s", out)
	}
	if !strings.Contains(out, "access key "+creds.AccessKey) || !strings.Contains(out, "secret in "+creds.Path) {
		t.Fatalf("a restart does not name the access key and the secret's file:\n%s", out)
	}
	again.stop(t)

	const secret = "env-secret-key-for-banner"
	fromEnv := startServe(t, map[string]string{"GRANARY_DATA_DIR": t.TempDir(),
		"GRANARY_ACCESS_KEY": "env-access", "GRANARY_SECRET_KEY": secret})
	if out := fromEnv.stderr.String(); strings.Contains(out, secret) || !strings.Contains(out, "secret from the environment") {
		t.Fatalf("a secret from the environment was printed, or its place not named:\n%s", out)
	}
	file := writeFile(t, t.TempDir(), "sk", secret+"\n")
	fromFile := startServe(t, map[string]string{"GRANARY_DATA_DIR": t.TempDir(),
		"GRANARY_ACCESS_KEY": "env-access", "GRANARY_SECRET_KEY_FILE": file})
	if out := fromFile.stderr.String(); strings.Contains(out, secret) || !strings.Contains(out, "secret in "+file) {
		t.Fatalf("a secret from GRANARY_SECRET_KEY_FILE was printed, or its file not named:\n%s", out)
	}
}

// TestKeyLengthsRefused: `granary serve` with a key pair out of bounds
// exits with a usage error naming the variable (or the file and the key),
// before it listens.
func TestKeyLengthsRefused(t *testing.T) {
	long := strings.Repeat("k", access.MaxAccessKey+1)
	skFile := writeFile(t, t.TempDir(), "sk", "short\n")
	cases := []struct {
		env  map[string]string
		file string // the credentials file's content, if any
		want string
	}{
		{env: map[string]string{"GRANARY_ACCESS_KEY": "ab", "GRANARY_SECRET_KEY": "long-enough-secret"}, want: "GRANARY_ACCESS_KEY: the access key must be 3 to 128"},
		{env: map[string]string{"GRANARY_ACCESS_KEY": long, "GRANARY_SECRET_KEY": "long-enough-secret"}, want: "GRANARY_ACCESS_KEY: the access key must be 3 to 128"},
		{env: map[string]string{"GRANARY_ACCESS_KEY": "a,b", "GRANARY_SECRET_KEY": "long-enough-secret"}, want: "GRANARY_ACCESS_KEY: the access key may hold only"},
		{env: map[string]string{"GRANARY_ACCESS_KEY": "abc", "GRANARY_SECRET_KEY": "1234567"}, want: "GRANARY_SECRET_KEY: the secret key must be 8 to 1024"},
		{env: map[string]string{"GRANARY_ACCESS_KEY": "abc", "GRANARY_SECRET_KEY_FILE": skFile}, want: "GRANARY_SECRET_KEY_FILE: the secret key must be 8"},
		{file: "GRANARY_ACCESS_KEY=xy\nGRANARY_SECRET_KEY=long-enough-secret\n", want: "GRANARY_ACCESS_KEY: the access key must be 3"},
		{file: "GRANARY_ACCESS_KEY=xyz\nGRANARY_SECRET_KEY=short\n", want: "GRANARY_SECRET_KEY: the secret key must be 8"},
	}
	for _, tc := range cases {
		dir := t.TempDir()
		env := map[string]string{"GRANARY_DATA_DIR": dir}
		maps.Copy(env, tc.env)
		if tc.file != "" {
			writeFile(t, dir, credentialsFile, tc.file)
			tc.want = "credentials file " + filepath.Join(dir, credentialsFile) + ": " + tc.want
		}
		var errb bytes.Buffer
		code := execute(context.Background(), []string{"serve", "--listen", "127.0.0.1:0"}, &errb, &errb, envMap(env))
		if code != exitUsage || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v / file %q: exit %d, want %d with %q:\n%s", tc.env, tc.file, code, exitUsage, tc.want, errb.String())
		}
		if strings.Contains(errb.String(), "long-enough-secret") {
			t.Errorf("the error printed the secret:\n%s", errb.String())
		}
		if _, err := os.Stat(filepath.Join(dir, "cache")); err == nil {
			t.Errorf("%v: the node built its cache before refusing its keys", tc.env)
		}
	}
}
