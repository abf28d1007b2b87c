package goroutines

import (
	"strings"
	"testing"
	"time"
)

func TestLeakedNamesWhatIsLeftAndClearsWhenItEnds(t *testing.T) {
	before := Snapshot()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); blockUntil(stop) }()
	err := Leaked(before, 100*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "blockUntil") {
		t.Fatalf("a blocked goroutine: %v", err)
	}
	close(stop)
	<-done
	if err := Leaked(before, 10*time.Second); err != nil {
		t.Fatalf("after it ended: %v", err)
	}
}

func blockUntil(c chan struct{}) { <-c }
