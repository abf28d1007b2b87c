// /metrics behind a bearer token, through a real HTTP client: no token is
// 401, a wrong one 403, the right one a scrape that parses as Prometheus
// text (checked as `promtool check metrics` checks it); /healthz stays
// open, and the token can change while the node runs.
package api

import (
	"bytes"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/granary-dev/granary/internal/testhttp"
)

func TestMetricsBearerToken(t *testing.T) {
	var token atomic.Pointer[[]byte]
	setToken := func(s string) { b := []byte(s); token.Store(&b) }
	setToken("first-token")
	e := newEnv(t, backends[0], func(o *nodeOptions) {
		o.MetricsToken = func() []byte { return *token.Load() }
	})
	url := "http://" + e.addr

	if code, body := scrape(t, url+"/healthz", ""); code != http.StatusOK || body != "ok" {
		t.Fatalf("/healthz without a token: %d %q", code, body)
	}
	if code, _ := scrape(t, url+"/metrics", ""); code != http.StatusUnauthorized {
		t.Fatalf("/metrics without a token: %d, want 401", code)
	}
	if code, _ := scrape(t, url+"/metrics", "not-the-token"); code != http.StatusForbidden {
		t.Fatalf("/metrics with a wrong token: %d, want 403", code)
	}
	code, body := scrape(t, url+"/metrics", "first-token")
	if code != http.StatusOK {
		t.Fatalf("/metrics with the token: %d %q", code, body)
	}
	checkPromText(t, body)

	setToken("second-token")
	if code, _ := scrape(t, url+"/metrics", "first-token"); code != http.StatusForbidden {
		t.Fatalf("the replaced token: %d, want 403", code)
	}
	if code, _ := scrape(t, url+"/metrics", "second-token"); code != http.StatusOK {
		t.Fatalf("the new token: %d, want 200", code)
	}
	setToken("") // no token could be read: nothing passes
	if code, _ := scrape(t, url+"/metrics", "second-token"); code != http.StatusForbidden {
		t.Fatalf("with no token in service: %d, want 403", code)
	}
}

// scrape GETs url, with "Authorization: Bearer token" unless token is "".
func scrape(t *testing.T, url, token string) (int, string) {
	t.Helper()
	return testhttp.Get(t, url, testhttp.Bearer(token)...)
}

// checkPromText parses a scrape and lints it as promtool check metrics
// does (promlint), failing on a parse error or a problem in a granary_
// metric.
func checkPromText(t *testing.T, body string) {
	t.Helper()
	problems, err := promlint.New(bytes.NewReader([]byte(body))).Lint()
	if err != nil {
		t.Fatalf("the scrape does not parse as Prometheus text: %v\n%s", err, body)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "granary_") {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		}
	}
	if !strings.Contains(body, "granary_requests_total") {
		t.Fatalf("the scrape lacks the request counter:\n%s", body)
	}
}
