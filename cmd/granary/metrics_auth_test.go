// `granary serve --metrics-auth bearer:FILE` end to end: scrapes need the
// file's token, a token rotated into the file takes over without a
// restart, /healthz stays open, and a missing file stops the start.
package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/granary-dev/granary/internal/testhttp"
)

func TestServeMetricsBearer(t *testing.T) {
	dir := t.TempDir()
	tokenPath := writeFile(t, dir, "metrics-token", "first-metrics-token\n")
	s := startServe(t, map[string]string{"GRANARY_DATA_DIR": filepath.Join(dir, "data")},
		"--metrics-auth", "bearer:"+tokenPath)
	base := "http://" + s.addr

	if got := httpGet(t, base+"/healthz"); got != "ok" {
		t.Fatalf("/healthz: %q", got)
	}
	for token, want := range map[string]int{"": 401, "wrong": 403, "first-metrics-token": 200} {
		if code, _ := bearerGet(t, base+"/metrics", token); code != want {
			t.Errorf("/metrics with token %q: %d, want %d", token, code, want)
		}
	}
	if _, body := bearerGet(t, base+"/metrics", "first-metrics-token"); !strings.Contains(body, "go_goroutines ") || !strings.Contains(body, "granary_") {
		t.Errorf("the scrape lacks the node's metrics:\n%s", body)
	}

	// A rotation: the new token renamed over the file.
	next := writeFile(t, dir, "metrics-token.new", "second-metrics-token\n")
	if err := os.Rename(next, tokenPath); err != nil {
		t.Fatal(err)
	}
	if code, _ := bearerGet(t, base+"/metrics", "first-metrics-token"); code != http.StatusForbidden {
		t.Errorf("the rotated-out token: %d, want 403", code)
	}
	if code, _ := bearerGet(t, base+"/metrics", "second-metrics-token"); code != http.StatusOK {
		t.Errorf("the rotated-in token: %d, want 200", code)
	}
	// A file emptied by a rotation half done keeps the last token.
	writeFile(t, dir, "metrics-token", "")
	if code, _ := bearerGet(t, base+"/metrics", "second-metrics-token"); code != http.StatusOK {
		t.Errorf("after the file was emptied: %d, want the last token to still work", code)
	}
	if out := s.stderr.String(); strings.Contains(out, "first-metrics-token") || strings.Contains(out, "second-metrics-token") {
		t.Errorf("a token reached the output:\n%s", out)
	}

	var errb bytes.Buffer
	code := execute(context.Background(), []string{"serve", "--listen", "127.0.0.1:0", "--metrics-auth", "bearer:" + filepath.Join(dir, "absent")},
		io.Discard, &errb, envMap(map[string]string{"GRANARY_DATA_DIR": t.TempDir()}))
	if code != exitUsage || !strings.Contains(errb.String(), "metrics-auth") {
		t.Errorf("a missing token file: exit %d, want %d naming metrics-auth:\n%s", code, exitUsage, errb.String())
	}
}

// bearerGet GETs url with "Authorization: Bearer token" (none if "").
func bearerGet(t *testing.T, url, token string) (int, string) {
	t.Helper()
	return testhttp.Get(t, url, testhttp.Bearer(token)...)
}
