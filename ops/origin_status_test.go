// The origin's health in the status report, as the CLI and the console
// read it (JSON), and warm-ups refused while it is down.
package ops

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/catalog"
	"github.com/granary-dev/granary/store/origin/guard"
	"github.com/granary-dev/granary/store/origin/s3"
	"github.com/granary-dev/granary/store/ram"
)

func TestStatusShowsTheOrigin(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close()
	inner, err := s3.New(s3.Options{Endpoint: refused, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	g, err := guard.New(guard.Options{Origin: inner, Name: "s3://" + refused, Timeout: time.Second, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	cat, err := catalog.Open(catalog.Options{Path: filepath.Join(t.TempDir(), "catalog.db"), Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	e, err := gateway.New(gateway.Options{Origin: g.Origin(), RAM: ram.New(ram.Options{Capacity: 1 << 20}),
		Catalog: cat, Health: g, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	o, err := New(e, Options{Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := g.Check(context.Background()); err == nil {
		t.Fatal("check of a refused port passed")
	}
	st, err := o.Status(context.Background(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Origin struct {
			Name, State, Breaker, Cause, LastError string
			Since                                  time.Time
		}
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	h := got.Origin
	if h.State != guard.StateDown || h.Breaker != "open" || h.Cause != guard.CauseRefused || h.LastError == "" ||
		h.Since.IsZero() || h.Name != "s3://"+refused {
		t.Fatalf("origin in the status JSON: %+v\n%s", h, raw)
	}
	// A warm-up honours the open breaker: refused at once.
	if _, err := o.StartWarm(context.Background(), WarmSpec{Bucket: "data"}); !errors.Is(err, store.ErrOriginDown) {
		t.Fatalf("a warm-up with the origin down: %v, want ErrOriginDown", err)
	}
}
