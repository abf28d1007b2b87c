// Flush: it waits for the writes under its prefix, reports progress,
// fails early on a write that cannot be uploaded, and honours its context.
package writeback

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/granary-dev/granary/store"
)

func TestFlushWaitsAndReports(t *testing.T) {
	raw := s3Origin(t)
	b := newBucket(t, raw)
	g := newGate(raw, false)
	l := openLog(t, Options{Origin: g, WriteBack: always})
	var bytes int64
	for i := range 5 {
		data := payload(1000*(i+1), uint64(i))
		put(t, l, b, fmt.Sprintf("p/%d", i), data)
		bytes += int64(len(data))
	}
	put(t, l, b, "q/other", []byte("outside the prefix"))

	reports := make(chan FlushStatus, 100)
	done := make(chan error, 1)
	go func() {
		done <- l.Flush(testCtx(t), b, "p/", func(st FlushStatus) { reports <- st })
	}()
	select {
	case st := <-reports:
		if st.Pending != 5 || st.PendingBytes != bytes || st.Uploaded != 0 {
			t.Fatalf("first progress = %+v, want 5 pending (%d bytes)", st, bytes)
		}
	case err := <-done:
		t.Fatalf("Flush returned %v with every upload held back", err)
	case <-time.After(3 * time.Second):
		t.Fatal("no progress report within 3 s")
	}
	// Reports go on while nothing changes.
	select {
	case st := <-reports:
		if st.Pending != 5 {
			t.Fatalf("second progress = %+v", st)
		}
	case <-time.After(2500 * time.Millisecond):
		t.Fatal("no second progress report within 2.5 s")
	}
	g.Open()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(opTimeout):
		t.Fatal("Flush did not return after the origin opened")
	}
	var last FlushStatus
	for len(reports) > 0 {
		last = <-reports
	}
	if last.Pending != 0 || last.Uploaded != 5 {
		t.Fatalf("last progress = %+v, want 0 pending, 5 uploaded", last)
	}
	for i := range 5 {
		if !l.Persisted(b, fmt.Sprintf("p/%d", i)) {
			t.Errorf("p/%d not persisted after the flush", i)
		}
	}
}

func TestFlushContext(t *testing.T) {
	raw := s3Origin(t)
	b := newBucket(t, raw)
	l := openLog(t, Options{Origin: newGate(raw, false), WriteBack: always})
	put(t, l, b, "k", []byte("held back"))
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := l.Flush(ctx, b, "", nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush = %v, want the context's error", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Flush took %v to notice its context", took)
	}
	if l.Persisted(b, "k") {
		t.Fatal("k persisted through a shut gate")
	}
	// Nothing pending under another prefix: at once.
	if err := l.Flush(testCtx(t), b, "other/", nil); err != nil {
		t.Fatal(err)
	}
}

// TestFlushPermanentFailure removes the bucket at the origin under a
// pending write: the upload cannot succeed, Flush says so at once, and
// the write stays journaled until the bucket is back.
func TestFlushPermanentFailure(t *testing.T) {
	raw := s3Origin(t)
	b := newBucket(t, raw)
	g := newGate(raw, false)
	l := openLog(t, Options{Origin: g, WriteBack: always})
	data := []byte("no bucket to land in")
	put(t, l, b, "k", data)
	g.awaitAttempt(t, "k")
	if err := raw.RemoveBucket(testCtx(t), b); err != nil {
		t.Fatal(err)
	}
	g.Open()
	start := time.Now()
	err := l.Flush(testCtx(t), b, "", nil)
	if !errors.Is(err, store.ErrNoSuchBucket) || !strings.Contains(err.Error(), b+"/k") {
		t.Fatalf("Flush = %v, want ErrNoSuchBucket naming %s/k", err, b)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Flush took %v to report a permanent failure", took)
	}
	if l.Persisted(b, "k") {
		t.Fatal("a failed write is no longer pending")
	}
	wantData(t, l, b, "k", data)
	if err := raw.MakeBucket(testCtx(t), b); err != nil {
		t.Fatal(err)
	}
	flush(t, l, b)
	wantData(t, raw, b, "k", data)
}
