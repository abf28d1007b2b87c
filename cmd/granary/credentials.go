// The node's S3 credentials: from the environment, else generated once
// and kept in <data-dir>/credentials so that restarts keep them.
package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/granary-dev/granary/access"
	"github.com/granary-dev/granary/store"
)

// credentialsFile is the name of the generated credentials under the data
// directory. It is written in shell syntax so `. credentials` works.
const credentialsFile = "credentials"

// Credentials is one access key and its secret.
type Credentials struct {
	AccessKey string
	SecretKey string
	// Source says where they came from, for the start-up banner:
	// "environment", "generated" or "file".
	Source string
	// Path is the file the secret is kept in: the credentials file, or
	// GRANARY_SECRET_KEY_FILE's; "" when the secret is in the environment
	// itself.
	Path string
}

// keyError is validateKeyPair's refusal: of which half of the pair, and why.
type keyError struct {
	secret bool // the secret key, else the access key
	msg    string
}

func (e *keyError) Error() string { return e.msg }

// validateKeyPair checks the node's key pair by access's rules. Its error
// is a *keyError; keyVar names the setting it is about.
func validateKeyPair(ak, secret string) error {
	if err := access.CheckAccessKey(ak); err != nil {
		return &keyError{msg: err.Error()}
	}
	if err := access.CheckSecret(secret); err != nil {
		return &keyError{secret: true, msg: err.Error()}
	}
	return nil
}

// keyVar returns, of the names of a pair's access and secret settings,
// the one a validateKeyPair error is about.
func keyVar(err error, access, secret string) string {
	var ke *keyError
	if errors.As(err, &ke) && ke.secret {
		return secret
	}
	return access
}

// envVarOf is the variable a secretFromEnv value came from: name, or
// name_FILE when that is set.
func envVarOf(getenv Getenv, name string) string {
	if v, _ := getenv(name + "_FILE"); v != "" {
		return name + "_FILE"
	}
	return name
}

// LoadCredentials returns the credentials of a node whose data directory
// is dataDir: GRANARY_ACCESS_KEY / GRANARY_SECRET_KEY (or their _FILE
// variants) when set, else those stored in dataDir, else new ones that it
// stores there with mode 0600.
func LoadCredentials(getenv Getenv, dataDir string) (Credentials, error) {
	ak, err := secretFromEnv(getenv, "GRANARY_ACCESS_KEY")
	if err != nil {
		return Credentials{}, err
	}
	sk, err := secretFromEnv(getenv, "GRANARY_SECRET_KEY")
	if err != nil {
		return Credentials{}, err
	}
	if ak != "" || sk != "" {
		if ak == "" || sk == "" {
			return Credentials{}, errors.New("set both GRANARY_ACCESS_KEY and GRANARY_SECRET_KEY, or neither to use generated ones")
		}
		if err := validateKeyPair(ak, sk); err != nil {
			return Credentials{}, fmt.Errorf("%s: %w", keyVar(err, envVarOf(getenv, "GRANARY_ACCESS_KEY"), envVarOf(getenv, "GRANARY_SECRET_KEY")), err)
		}
		secretFile, _ := getenv("GRANARY_SECRET_KEY_FILE")
		return Credentials{AccessKey: ak, SecretKey: sk, Source: "environment", Path: secretFile}, nil
	}
	path := filepath.Join(dataDir, credentialsFile)
	c, err := readCredentialsFile(path)
	if err == nil {
		return c, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return Credentials{}, err
	}
	return generateCredentials(path)
}

// readCredentialsFile reads a file written by generateCredentials. It
// refuses a file that others may read, as ssh does with private keys.
func readCredentialsFile(path string) (Credentials, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Credentials{}, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return Credentials{}, fmt.Errorf("credentials file %s is accessible by others (mode %#o); run chmod 600 on it", path, fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Credentials{}, err
	}
	c := Credentials{Source: "file", Path: path}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, val, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		switch {
		case !ok:
		case name == "GRANARY_ACCESS_KEY":
			c.AccessKey = val
		case name == "GRANARY_SECRET_KEY":
			c.SecretKey = val
		}
	}
	if c.AccessKey == "" || c.SecretKey == "" {
		return Credentials{}, fmt.Errorf("credentials file %s lacks GRANARY_ACCESS_KEY or GRANARY_SECRET_KEY; fix it or delete it to generate new ones", path)
	}
	if err := validateKeyPair(c.AccessKey, c.SecretKey); err != nil {
		return Credentials{}, fmt.Errorf("credentials file %s: %s: %w; fix it or delete it to generate new ones", path, keyVar(err, "GRANARY_ACCESS_KEY", "GRANARY_SECRET_KEY"), err)
	}
	return c, nil
}

// generateCredentials makes a new key pair and writes it to path. The file
// is written and synced under a temporary name, then hard-linked to path,
// so a crash never leaves a half-written file; and since a link (unlike a
// rename) fails when path exists, two nodes started at once on one data
// directory cannot both win: the loser reads the winner's.
func generateCredentials(path string) (Credentials, error) {
	c := Credentials{
		AccessKey: randomString(20, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"),
		SecretKey: randomString(40, secretAlphabet),
		Source:    "generated",
		Path:      path,
	}
	if err := os.MkdirAll(filepath.Dir(path), store.PrivateDirMode); err != nil {
		return Credentials{}, err
	}
	tmp := fmt.Sprintf("%s.tmp-%s", path, randomString(8, "abcdefghijklmnopqrstuvwxyz0123456789"))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, store.PrivateFileMode)
	if err != nil {
		return Credentials{}, err
	}
	defer os.Remove(tmp) // a no-op once renamed
	body := fmt.Sprintf("# Granary S3 credentials, generated; keep this file private.\nGRANARY_ACCESS_KEY=%s\nGRANARY_SECRET_KEY=%s\n", c.AccessKey, c.SecretKey)
	if _, err := f.WriteString(body); err != nil {
		f.Close()
		return Credentials{}, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return Credentials{}, err
	}
	if err := f.Close(); err != nil {
		return Credentials{}, err
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return readCredentialsFile(path)
		}
		return Credentials{}, err
	}
	return c, nil
}

// secretAlphabet is what generated secrets are made of.
const secretAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// randomString returns n characters drawn uniformly from alphabet with
// crypto/rand (rand.Text-style rejection sampling avoids modulo bias).
func randomString(n int, alphabet string) string {
	out := make([]byte, 0, n)
	limit := 256 - 256%len(alphabet)
	buf := make([]byte, 2*n)
	for len(out) < n {
		rand.Read(buf) // never fails (crypto/rand panics on failure, Go 1.24+)
		for _, b := range buf {
			if int(b) < limit && len(out) < n {
				out = append(out, alphabet[int(b)%len(alphabet)])
			}
		}
	}
	return string(out)
}
