// The history call and the console's route: what a key may see of the
// node's traffic, and the console's assets served without credentials.
package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/access"
	"github.com/granary-dev/granary/gateway"
)

func TestAdminHistory(t *testing.T) {
	origin, root := backends[0].open(t)
	reg := accessForTest()
	e := newEnvOver(t, gateway.Options{Origin: origin}, root, nil, func(o *nodeOptions) {
		o.Access = reg
		o.HistoryEvery = 50 * time.Millisecond
	})
	mine, other := e.makeBucket(t, "hist"), e.makeBucket(t, "hist-other")
	grants := []access.Grant{{Bucket: mine, Actions: access.All}}
	if err := reg.SetUsers([]access.User{{AccessKey: "bucket-ops", Secret: "bucket-ops-secret", Grants: grants}}); err != nil {
		t.Fatal(err)
	}
	body := randomBytes(300 << 10)
	e.put(t, mine, "obj", body, minio.PutObjectOptions{})
	e.put(t, other, "obj", body[:1000], minio.PutObjectOptions{})
	for _, b := range []string{mine, mine, other} {
		if _, err := e.get(t, b, "obj", minio.GetObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	history := func(query, key, secret string) (int, HistoryAnswer, []byte) {
		resp, raw := e.do(t, rawRequest{method: http.MethodGet, path: "/_granary/history", query: query, access: key, secret: secret})
		var h HistoryAnswer
		if resp.StatusCode == http.StatusOK {
			if err := json.Unmarshal(raw, &h); err != nil {
				t.Fatalf("history ?%s: %v in %s", query, err, raw)
			}
		}
		return resp.StatusCode, h, raw
	}
	sent := func(h HistoryAnswer) (bytes, lookups int64) {
		for _, p := range h.Points {
			bytes += p.BytesOut
			lookups += p.Hits + p.Misses
		}
		return bytes, lookups
	}
	// Node-wide, every byte the three GETs sent shows, once sampled.
	want := int64(2*len(body) + 1000)
	deadline := time.Now().Add(time.Minute)
	for {
		code, h, raw := history("", "", "")
		if code != http.StatusOK || h.Every != 0.05 {
			t.Fatalf("node history: %d %s", code, raw)
		}
		if got, lookups := sent(h); got == want && lookups >= 3 {
			break
		} else if got > want || time.Now().After(deadline) {
			t.Fatalf("node history counts %d bytes sent (%d lookups), want %d", got, lookups, want)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
	// A bucket's admin sees that bucket's, and nothing node-wide or of
	// another bucket.
	code, h, raw := history("bucket="+mine, "bucket-ops", "bucket-ops-secret")
	if got, _ := sent(h); code != http.StatusOK || h.Bucket != mine || got != int64(2*len(body)) {
		t.Fatalf("bucket history: %d, %d bytes sent, want %d: %s", code, got, 2*len(body), raw)
	}
	for _, q := range []string{"", "bucket=" + other} {
		if code, _, raw := history(q, "bucket-ops", "bucket-ops-secret"); code != http.StatusForbidden || errorCode(t, raw) != "AccessDenied" {
			t.Fatalf("history ?%s as a bucket admin: %d %s, want AccessDenied", q, code, raw)
		}
	}
	if code, _, raw := history("bucket=Bad_Name", "", ""); code != http.StatusBadRequest {
		t.Fatalf("history of a bad bucket name: %d %s", code, raw)
	}
}

// The console's page is served to anyone, signed or not (its path is no
// bucket's), with its security headers; the admin API beside it is not.
func TestConsoleRoute(t *testing.T) {
	e := newEnv(t, backends[0])
	for _, rr := range []rawRequest{
		{method: http.MethodGet, path: "/_granary/console/", unsigned: true},
		{method: http.MethodGet, path: "/_granary/console/"},
	} {
		resp, body := e.do(t, rr)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
			!strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") ||
			!strings.Contains(string(body), `name="granary-region" content="`+testRegion+`"`) {
			t.Fatalf("console page (unsigned %v): %d %v\n%s", rr.unsigned, resp.StatusCode, resp.Header, body)
		}
	}
	resp, body := e.do(t, rawRequest{method: http.MethodGet, path: "/_granary/history", unsigned: true})
	if resp.StatusCode != http.StatusForbidden || errorCode(t, body) != "AccessDenied" {
		t.Fatalf("unsigned history: %d %s", resp.StatusCode, body)
	}
	resp, _ = e.do(t, rawRequest{method: http.MethodGet, path: "/_granary/consolex", unsigned: true})
	if resp.StatusCode == http.StatusOK {
		t.Fatal("a path that only starts like the console's was served as it")
	}
}
