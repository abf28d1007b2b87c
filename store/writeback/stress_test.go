// A randomized run: writers put and delete their keys while the buckets
// switch between write-back and pass-through and the origin fails a third
// of the writes. What lands at the origin must be, per key, the writes
// acknowledged, in order (some skipped), ending with the last.
package writeback

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/origin/fs"
)

// flaky fails a share of the writes it is sent and records those that
// land, in order.
type flaky struct {
	store.Origin
	mu     sync.Mutex
	rnd    *rand.Rand
	events []event
}

func (f *flaky) fail() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rnd.IntN(3) == 0 {
		return fmt.Errorf("flaky: %w", store.ErrUnavailable)
	}
	return nil
}

func (f *flaky) Put(ctx context.Context, bucket, key string, body io.Reader, size int64, meta store.ObjectMeta) (store.ObjectInfo, error) {
	if err := f.fail(); err != nil {
		return store.ObjectInfo{}, err
	}
	// Recorded under the lock with the write itself, so the record's
	// order is the origin's.
	f.mu.Lock()
	defer f.mu.Unlock()
	info, err := f.Origin.Put(ctx, bucket, key, body, size, meta)
	if err == nil {
		f.events = append(f.events, event{"put", key, info.ETag})
	}
	return info, err
}

func (f *flaky) Delete(ctx context.Context, bucket, key string) error {
	if err := f.fail(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.Origin.Delete(ctx, bucket, key)
	if err == nil {
		f.events = append(f.events, event{"delete", key, ""})
	}
	return err
}

func TestRandomOrderUnderFailures(t *testing.T) {
	o, err := fs.New(fs.Options{Root: t.TempDir(), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	ctx := testCtx(t)
	if err := o.MakeBucket(ctx, "bucket"); err != nil {
		t.Fatal(err)
	}
	f := &flaky{Origin: o, rnd: rand.New(rand.NewPCG(1, 2))}
	var wb atomic.Bool
	l := openLog(t, Options{Origin: f, WriteBack: func(string) bool { return wb.Load() },
		RetryMin: time.Millisecond, RetryMax: 5 * time.Millisecond})
	stop := make(chan struct{})
	var flipper sync.WaitGroup
	flipper.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
				wb.Store(!wb.Load())
			}
		}
	})

	const keys, ops = 8, 40
	acked := make([][]string, keys) // per key: ETags of acknowledged writes ("" = delete)
	var writers sync.WaitGroup
	for k := range keys {
		writers.Go(func() {
			key := fmt.Sprintf("k%d", k)
			rnd := rand.New(rand.NewPCG(uint64(k), 7))
			for i := range ops {
				var etag string
				var err error
				if rnd.IntN(4) == 0 {
					err = l.Delete(ctx, "bucket", key)
				} else {
					data := []byte(fmt.Sprintf("%s version %d", key, i))
					var info store.ObjectInfo
					info, err = l.Put(ctx, "bucket", key, bytes.NewReader(data), int64(len(data)), store.ObjectMeta{})
					etag = info.ETag
				}
				if err == nil {
					acked[k] = append(acked[k], etag)
				} else if !errors.Is(err, store.ErrUnavailable) {
					t.Errorf("%s op %d: %v", key, i, err)
				}
			}
		})
	}
	writers.Wait()
	close(stop)
	flipper.Wait()
	flush(t, l, "")
	f.mu.Lock()
	events := f.events
	f.mu.Unlock()
	for k := range keys {
		key := fmt.Sprintf("k%d", k)
		if len(acked[k]) == 0 {
			continue
		}
		g := &gate{events: events}
		wantOrdered(t, g, key, acked[k])
		last := acked[k][len(acked[k])-1]
		if last == "" {
			wantMissing(t, o, "bucket", key)
		} else if st, err := o.Stat(ctx, "bucket", key); err != nil || st.ETag != last {
			t.Errorf("%s at the origin: %+v, %v; want ETag %s", key, st, err, last)
		}
	}
}
