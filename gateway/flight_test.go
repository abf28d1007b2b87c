// A flight wakes a waiter only once the bytes it waits for are there,
// or the flight ends: a publish short of them leaves it asleep.
package gateway

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"
)

// awaitNeed waits until some waiter on f needs n bytes published.
func awaitNeed(t *testing.T, f *flight, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		f.mu.Lock()
		need := f.need
		f.mu.Unlock()
		if need == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no waiter for %d bytes (need %d)", n, need)
		}
		time.Sleep(time.Millisecond)
	}
}

// closed reports whether ch is closed.
func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestFlightWakesWaiterOnceItsBytesAreThere(t *testing.T) {
	f := newFlight(2000, wantNow, &spareBufs{})
	for i := range f.buf {
		f.buf[i] = byte(i)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := f.bytesAt(context.Background(), 1500)
		got <- b
	}()
	awaitNeed(t, f, 1501)
	wake := f.wake
	f.publish(1000, nil, false)
	if closed(wake) {
		t.Fatal("a publish short of the waiter's bytes woke it")
	}
	f.publish(600, nil, false)
	if !closed(wake) {
		t.Fatal("a publish that brought the waiter's bytes did not wake it")
	}
	if b := <-got; !bytes.Equal(b, f.buf[1500:1600]) {
		t.Fatalf("the waiter got %d bytes, want 100 from 1500", len(b))
	}
}

func TestFlightEndWakesEveryWaiter(t *testing.T) {
	f := newFlight(2000, wantNow, &spareBufs{})
	errs := make(chan error, 2)
	wait := func(off int) {
		go func() {
			_, err := f.bytesAt(context.Background(), off)
			errs <- err
		}()
		awaitNeed(t, f, off+1) // the least need of the waiters so far
	}
	wait(1999)
	wait(10)
	f.publish(5, nil, false) // short of both
	boom := errors.New("origin gone")
	f.publish(0, boom, true)
	for range 2 {
		select {
		case err := <-errs:
			if !errors.Is(err, boom) {
				t.Fatalf("a waiter got %v, want the flight's error", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the flight's end left a waiter asleep")
		}
	}
}
