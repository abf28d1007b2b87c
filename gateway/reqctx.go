// Requests in contexts: the API derives each request's context with the
// request's id, and what the engine logs about that request carries it.
package gateway

import (
	"context"

	"github.com/rs/zerolog"
)

type requestIDKey struct{}

// WithRequestID returns ctx carrying request id id.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID is the id of the request ctx belongs to, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// logFor is the engine's logger for work on behalf of ctx's request: it
// names the request, if ctx belongs to one.
func (e *Engine) logFor(ctx context.Context) *zerolog.Logger {
	id := RequestID(ctx)
	if id == "" {
		return &e.log
	}
	l := e.log.With().Str("request_id", id).Logger()
	return &l
}
