// Tests of the pin set: prefixes match, configured pins stay, the API's
// pins survive a reopen, and every change moves the generation.
package pins

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestPins(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pins.json")
	p, err := Open(map[string][]string{"data": {"train/"}}, path)
	if err != nil {
		t.Fatal(err)
	}
	g0 := p.Generation()
	if !p.Pinned("data", "train/a") || p.Pinned("data", "val/a") || p.Pinned("other", "train/a") {
		t.Fatal("configured pin matches wrongly")
	}
	if err := p.Add("data", "val/"); err != nil {
		t.Fatal(err)
	}
	if !p.Pinned("data", "val/x") || p.Generation() == g0 {
		t.Fatal("added pin not in effect")
	}
	g1 := p.Generation()
	if err := p.Add("data", "val/"); err != nil || p.Generation() != g1 {
		t.Fatalf("adding a pin twice: %v, generation moved", err)
	}
	if err := p.Remove("data", "train/"); !errors.Is(err, ErrConfigured) {
		t.Fatalf("removing a configured pin: %v", err)
	}
	if err := p.Remove("data", "nothing/"); !errors.Is(err, ErrNoSuchPin) {
		t.Fatalf("removing a missing pin: %v", err)
	}
	if err := p.Add("logs", ""); err != nil { // a whole bucket
		t.Fatal(err)
	}
	q, err := Open(map[string][]string{"data": {"train/"}}, path)
	if err != nil {
		t.Fatal(err)
	}
	if got := q.List(); len(got) != 3 || !got[0].Configured || got[1].Prefix != "val/" || got[2].Bucket != "logs" {
		t.Fatalf("pins after a reopen: %+v", got)
	}
	if !q.Pinned("logs", "anything") {
		t.Fatal("whole-bucket pin not in effect after a reopen")
	}
	if err := q.Remove("data", "val/"); err != nil || q.Pinned("data", "val/x") {
		t.Fatalf("remove: %v", err)
	}
	if r, err := Open(nil, path); err != nil || len(r.List()) != 1 {
		t.Fatalf("after remove and reopen: %+v, %v", r.List(), err)
	}
}

func TestPinsBadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pins.json")
	if err := os.WriteFile(path, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(nil, path); err == nil {
		t.Fatal("a corrupt pins file was accepted")
	}
}
