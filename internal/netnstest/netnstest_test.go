// The segment as the test process sees it: a server in a host answers,
// stops answering (a timeout, not a refusal) while the host is cut off,
// and answers again once healed.
package netnstest

import (
	"net/http"
	"testing"
	"time"
)

func TestCutAndHeal(t *testing.T) {
	n := New(t)
	h := n.Host(t)
	srv := h.Command("python3", "-m", "http.server", "--bind", h.IP, "8080")
	srv.Dir = t.TempDir()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	url := "http://" + h.IP + ":8080/"
	get := func(timeout time.Duration) error {
		c := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	answers := func(what string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for err := get(5 * time.Second); err != nil; err = get(5 * time.Second) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the host's server never answered: %v", what, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	answers("before the cut")
	h.Cut(t)
	if err := get(2 * time.Second); err == nil {
		t.Fatal("the host answered while cut off")
	}
	h.Heal(t)
	answers("after healing")
}
