package gateway

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestLogForNamesTheRequest(t *testing.T) {
	var out bytes.Buffer
	e := &Engine{log: zerolog.New(&out)}
	e.logFor(WithRequestID(context.Background(), "req-123")).Info().Msg("about a request")
	e.logFor(context.Background()).Info().Msg("about nothing in particular")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"request_id":"req-123"`) || strings.Contains(lines[1], "request_id") {
		t.Fatalf("log lines:\n%s", out.String())
	}
}
