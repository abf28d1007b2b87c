// Status over a real engine: a bucket's figures per tier and its quota.
package ops

import (
	"bytes"
	"context"
	"fmt"
	"testing"
)

// quotaSet gives every bucket the same quota.
type quotaSet int64

func (q quotaSet) Quota(string) int64 { return int64(q) }

// TestQuotaCapsBucket: a bucket never holds more than its quota in a
// tier, its reads past it still succeed (from the origin), and status
// reports its bytes per tier and the quota.
func TestQuotaCapsBucket(t *testing.T) {
	const quota = 1 << 20
	r := newRig(t, rigOptions{quotas: quotaSet(quota)})
	objs := map[string][]byte{}
	for i := range 12 {
		k := fmt.Sprintf("q/%d", i)
		objs[k] = randBytes(t, 256<<10)
		r.seed(k, objs[k])
	}
	for k, want := range objs {
		if got := r.read(k); !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes", k, len(got))
		}
	}
	r.ops.Close()
	r.e.Close() // the disk queue written out
	st, err := r.ops.Status(context.Background(), r.bucket, "")
	if err != nil {
		t.Fatal(err)
	}
	b := st.Buckets[0]
	if b.Quota != quota || b.TierBytes["ram"] == 0 || b.TierBytes["ram"] > quota || b.TierBytes["disk"] == 0 || b.TierBytes["disk"] > quota {
		t.Fatalf("a bucket with a 1 MiB quota after reading 3 MiB: %+v", b)
	}
}
