// Tests of the users file: sealed secrets, modes, and updates under the lock.
package access

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestUsersFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path, keyPath := filepath.Join(dir, "users.json"), filepath.Join(dir, "users.key")
	add := User{AccessKey: "trainer", Secret: "s3cret-trainer-value", Grants: mustGrants(t, "read,list:datasets/imagenet/")}
	err := UpdateUsers(path, keyPath, func(us []User) ([]User, error) { return append(us, add), nil })
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, keyPath} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %#o, want 0600", p, fi.Mode().Perm())
		}
	}
	raw, _ := os.ReadFile(path)
	if strings.Contains(string(raw), add.Secret) {
		t.Fatal("the users file holds the secret in clear")
	}
	key, err := LoadKey(keyPath, false)
	if err != nil {
		t.Fatal(err)
	}
	users, err := ReadUsers(path, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(users) != 1 || users[0].Secret != add.Secret || users[0].Grants[0] != add.Grants[0] {
		t.Fatalf("read back %+v, want %+v", users, add)
	}

	other := make([]byte, keyLen)
	if _, err := ReadUsers(path, other); err == nil || !strings.Contains(err.Error(), "does not open") {
		t.Fatalf("another key opened the file: %v", err)
	}
	// A sealed secret moved to another user does not open: the access key
	// is bound to it.
	moved := strings.Replace(string(raw), `"trainer"`, `"intruder"`, 1)
	if err := os.WriteFile(path, []byte(moved), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadUsers(path, key); err == nil {
		t.Fatal("a secret moved to another access key opened")
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadUsers(path, key); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a file others may read was accepted: %v", err)
	}
}

func TestUsersFileRefusedChangeKeepsFile(t *testing.T) {
	dir := t.TempDir()
	path, keyPath := filepath.Join(dir, "users.json"), filepath.Join(dir, "users.key")
	ok := User{AccessKey: "one", Secret: "secret-one"}
	if err := UpdateUsers(path, keyPath, func(us []User) ([]User, error) { return append(us, ok), nil }); err != nil {
		t.Fatal(err)
	}
	bad := User{AccessKey: "x", Secret: "short"}
	if err := UpdateUsers(path, keyPath, func(us []User) ([]User, error) { return append(us, bad), nil }); err == nil {
		t.Fatal("an invalid user was written")
	}
	key, _ := LoadKey(keyPath, false)
	users, err := ReadUsers(path, key)
	if err != nil || len(users) != 1 || users[0].AccessKey != "one" {
		t.Fatalf("after a refused change: %+v, %v", users, err)
	}
}

// Concurrent updates (several `granary user add` at once) lose none.
func TestUsersFileConcurrentUpdates(t *testing.T) {
	dir := t.TempDir()
	path, keyPath := filepath.Join(dir, "users.json"), filepath.Join(dir, "users.key")
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u := User{AccessKey: fmt.Sprintf("user%02d", i), Secret: "secret-value-0"}
			errs <- UpdateUsers(path, keyPath, func(us []User) ([]User, error) { return append(us, u), nil })
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	key, _ := LoadKey(keyPath, false)
	users, err := ReadUsers(path, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(users) != n {
		t.Fatalf("%d users after %d concurrent adds", len(users), n)
	}
}
