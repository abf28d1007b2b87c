// Tests of the node's credentials: environment, generation, reuse and the
// file's mode.
package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestCredentialsGeneratedOnceAndReused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data") // does not exist yet
	first, err := LoadCredentials(envMap(nil), dir)
	if err != nil {
		t.Fatal(err)
	}
	if first.Source != "generated" || len(first.AccessKey) != 20 || len(first.SecretKey) != 40 {
		t.Fatalf("generated %+v", first.Source)
	}
	path := filepath.Join(dir, credentialsFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %#o, want 0600", fi.Mode().Perm())
	}
	again, err := LoadCredentials(envMap(nil), dir)
	if err != nil {
		t.Fatal(err)
	}
	if again.Source != "file" || again.AccessKey != first.AccessKey || again.SecretKey != first.SecretKey {
		t.Fatalf("second start got different credentials (source %s)", again.Source)
	}
	other, err := LoadCredentials(envMap(nil), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if other.AccessKey == first.AccessKey || other.SecretKey == first.SecretKey {
		t.Fatal("two data directories got the same credentials")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("data dir holds %d entries, want only the credentials file", len(entries))
	}
}

func TestCredentialsFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	c, err := LoadCredentials(envMap(map[string]string{"GRANARY_ACCESS_KEY": "AKID", "GRANARY_SECRET_KEY": "SECRET-KEY"}), dir)
	if err != nil || c.AccessKey != "AKID" || c.SecretKey != "SECRET-KEY" || c.Source != "environment" || c.Path != "" {
		t.Fatalf("%+v %v", c.Source, err)
	}
	if _, err := os.Stat(filepath.Join(dir, credentialsFile)); !os.IsNotExist(err) {
		t.Fatalf("credentials from the environment were written to disk: %v", err)
	}
	sk := writeFile(t, dir, "sk", "from-file\n")
	c, err = LoadCredentials(envMap(map[string]string{"GRANARY_ACCESS_KEY": "AKID", "GRANARY_SECRET_KEY_FILE": sk}), dir)
	if err != nil || c.SecretKey != "from-file" || c.Path != sk {
		t.Fatalf("secret from file: %+v %v", c.Path, err)
	}
	_, err = LoadCredentials(envMap(map[string]string{"GRANARY_ACCESS_KEY": "AKID"}), dir)
	if err == nil || !strings.Contains(err.Error(), "both") {
		t.Fatalf("access key alone: %v", err)
	}
}

func TestCredentialsFileChecks(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, credentialsFile)
	writeFile(t, dir, credentialsFile, "GRANARY_ACCESS_KEY=A\nGRANARY_SECRET_KEY=S\n")
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCredentials(envMap(nil), dir); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("world-readable file: %v", err)
	}
	writeFile(t, dir, credentialsFile, "GRANARY_ACCESS_KEY=A\n")
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCredentials(envMap(nil), dir); err == nil || !strings.Contains(err.Error(), "lacks") {
		t.Fatalf("truncated file: %v", err)
	}
	writeFile(t, dir, credentialsFile, "# hand-written\nGRANARY_ACCESS_KEY=AKID\nGRANARY_SECRET_KEY=S=xxxxxxx\n")
	c, err := LoadCredentials(envMap(nil), dir)
	if err != nil || c.AccessKey != "AKID" || c.SecretKey != "S=xxxxxxx" {
		t.Fatalf("hand-written file: %+v %v", c.Source, err)
	}
}

// TestCredentialsConcurrentStarts checks that nodes started at once on one
// empty data directory all end up with the same credentials.
func TestCredentialsConcurrentStarts(t *testing.T) {
	dir := t.TempDir()
	const n = 8
	got := make([]Credentials, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = LoadCredentials(envMap(nil), dir)
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if got[i].AccessKey != got[0].AccessKey || got[i].SecretKey != got[0].SecretKey {
			t.Fatalf("start %d got other credentials", i)
		}
	}
}

// TestValidateKeyPairBounds: the bounds are inclusive, counted in bytes.
func TestValidateKeyPairBounds(t *testing.T) {
	rep := strings.Repeat
	cases := []struct {
		access, secret string
		ok, secretBad  bool
	}{
		{"abc", "12345678", true, false},
		{rep("a", 128), rep("s", 1024), true, false},
		{"ab", "12345678", false, false},
		{rep("a", 129), "12345678", false, false},
		{"a b", "12345678", false, false},
		{"a=b", "12345678", false, false},
		{"ключ", "12345678", false, false},
		{"abc", "1234567", false, true},
		{"abc", rep("s", 1025), false, true},
	}
	for _, tc := range cases {
		err := validateKeyPair(tc.access, tc.secret)
		if (err == nil) != tc.ok {
			t.Errorf("%q/%d-byte secret: %v, want ok=%v", tc.access, len(tc.secret), err, tc.ok)
			continue
		}
		if err != nil && (keyVar(err, "A", "S") == "S") != tc.secretBad {
			t.Errorf("%q/%d-byte secret: blamed %s", tc.access, len(tc.secret), keyVar(err, "A", "S"))
		}
	}
}

func TestRandomStringAlphabet(t *testing.T) {
	const alphabet = "ab"
	s := randomString(2000, alphabet)
	if len(s) != 2000 {
		t.Fatalf("length %d", len(s))
	}
	a := strings.Count(s, "a")
	if a+strings.Count(s, "b") != len(s) || a < 800 || a > 1200 {
		t.Fatalf("%d of 2000 are 'a': not uniform over %q", a, alphabet)
	}
}
