// The users file: JSON, mode 0600, each secret sealed with AES-256-GCM
// under a key kept in a separate file (SigV4 needs the secret itself, so
// it cannot be hashed; a copy of the users file alone gives no secret
// away). Changes are made under an exclusive lock and published by rename,
// so a reader sees the old file or the new one.
package access

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// fileVersion is the users file's format version.
const fileVersion = 1

type fileDoc struct {
	Version int        `json:"version"`
	Users   []fileUser `json:"users"`
}

type fileUser struct {
	AccessKey string   `json:"access_key"`
	Secret    string   `json:"secret"` // base64 of nonce || sealed secret
	Allow     []string `json:"allow"`
}

// keyLen is the sealing key's length: AES-256.
const keyLen = 32

// LoadKey reads the sealing key (hex) from path. With create, a missing
// file is made with a new random key, mode 0600.
func LoadKey(path string, create bool) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && create {
		return newKeyFile(path)
	}
	if err != nil {
		return nil, err
	}
	if err := privateFile(path); err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(key) != keyLen {
		return nil, fmt.Errorf("users key file %s: want %d hex-encoded bytes", path, keyLen)
	}
	return key, nil
}

// newKeyFile writes a new key to path; if another process made one first,
// that one is read.
func newKeyFile(path string) ([]byte, error) {
	key := make([]byte, keyLen)
	rand.Read(key) // never fails (crypto/rand panics on failure, Go 1.24+)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return LoadKey(path, false)
	}
	if err != nil {
		return nil, err
	}
	_, werr := f.WriteString(hex.EncodeToString(key) + "\n")
	serr := f.Sync()
	if err := errors.Join(werr, serr, f.Close()); err != nil {
		os.Remove(path)
		return nil, err
	}
	return key, nil
}

// privateFile refuses a file others may read, as ssh does with keys.
func privateFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s is accessible by others (mode %#o); run chmod 600 on it", path, fi.Mode().Perm())
	}
	return nil
}

// ReadUsers reads the users file at path; a missing file holds no users.
func ReadUsers(path string, key []byte) ([]User, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := privateFile(path); err != nil {
		return nil, err
	}
	var doc fileDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("users file %s: %w", path, err)
	}
	if doc.Version != fileVersion {
		return nil, fmt.Errorf("users file %s: version %d, want %d", path, doc.Version, fileVersion)
	}
	aead, err := sealer(key)
	if err != nil {
		return nil, err
	}
	users := make([]User, 0, len(doc.Users))
	for _, fu := range doc.Users {
		u, err := fu.open(aead)
		if err != nil {
			return nil, fmt.Errorf("users file %s: %w", path, err)
		}
		users = append(users, u)
	}
	return users, nil
}

// LoadUsers reads the users file at path with the key in keyPath; with no
// users file there are no users, and the key file need not exist.
func LoadUsers(path, keyPath string) ([]User, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	key, err := LoadKey(keyPath, false)
	if err != nil {
		return nil, err
	}
	return ReadUsers(path, key)
}

func (fu fileUser) open(aead cipher.AEAD) (User, error) {
	u := User{AccessKey: fu.AccessKey}
	sealed, err := base64.StdEncoding.DecodeString(fu.Secret)
	if err != nil || len(sealed) < aead.NonceSize() {
		return u, fmt.Errorf("user %q: the secret is not sealed", fu.AccessKey)
	}
	nonce, box := sealed[:aead.NonceSize()], sealed[aead.NonceSize():]
	secret, err := aead.Open(nil, nonce, box, []byte(fu.AccessKey))
	if err != nil {
		return u, fmt.Errorf("user %q: the secret does not open with this key file", fu.AccessKey)
	}
	u.Secret = string(secret)
	for _, s := range fu.Allow {
		g, err := ParseGrant(s)
		if err != nil {
			return u, fmt.Errorf("user %q: %w", fu.AccessKey, err)
		}
		u.Grants = append(u.Grants, g)
	}
	return u, nil
}

func sealer(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// writeUsers publishes users at path: written and synced under a
// temporary name, then renamed over the old file.
func writeUsers(path string, key []byte, users []User) error {
	aead, err := sealer(key)
	if err != nil {
		return err
	}
	doc := fileDoc{Version: fileVersion, Users: make([]fileUser, 0, len(users))}
	for _, u := range users {
		nonce := make([]byte, aead.NonceSize())
		rand.Read(nonce)
		sealed := aead.Seal(nonce, nonce, []byte(u.Secret), []byte(u.AccessKey))
		fu := fileUser{AccessKey: u.AccessKey, Secret: base64.StdEncoding.EncodeToString(sealed), Allow: []string{}}
		for _, g := range u.Grants {
			fu.Allow = append(fu.Allow, g.String())
		}
		doc.Users = append(doc.Users, fu)
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, werr := f.Write(append(data, '\n'))
	serr := f.Sync()
	if err := errors.Join(werr, serr, f.Close()); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// UpdateUsers changes the users file at path under an exclusive lock
// (path + ".lock"): change gets the current users and returns the new
// ones, or an error that leaves the file as it was. The key file is made
// if missing.
func UpdateUsers(path, keyPath string, change func([]User) ([]User, error)) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	lock, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	key, err := LoadKey(keyPath, true)
	if err != nil {
		return err
	}
	users, err := ReadUsers(path, key)
	if err != nil {
		return err
	}
	users, err = change(users)
	if err != nil {
		return err
	}
	for _, u := range users {
		if err := ValidateKeys(u.AccessKey, u.Secret); err != nil {
			return err
		}
	}
	return writeUsers(path, key, users)
}
