// VerifyInto's allocations: a signed GET, by header (as boto3 sends it) or
// SigV2, allocates nothing, whatever headers it carries; a presigned one
// only the string its escaped query decodes to (which the access key
// keeps). The test fails when a change adds one.
package sigv4

import (
	"net/http"
	"testing"
	"time"

	"github.com/granary-dev/granary/internal/racedetect"
)

func TestVerifyAllocs(t *testing.T) {
	if racedetect.On {
		t.Skip("the race detector makes sync.Pool drop items at random")
	}
	now := time.Now()
	cases := []struct {
		name string
		r    *Request
		max  float64
	}{
		{"boto3 header GET", boto3Get(now), 0},
		{"presigned GET", presigned(t, http.MethodGet, "http://"+testHost+"/bucket/datasets/shard-00042.tar", 3600, nil), 1},
		{"sigv2 GET", sigV2Get(now), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := fixedVerifier(now)
			mustVerify(t, v, c.r) // derives and caches the key
			var res Result
			n := testing.AllocsPerRun(100, func() {
				if err := v.VerifyInto(c.r, &res); err != nil {
					t.Fatal(err)
				}
			})
			if n > c.max {
				t.Fatalf("VerifyInto allocates %.0f times, want at most %.0f", n, c.max)
			}
		})
	}
}
