// Package goroutines helps tests check that work they started has ended:
// goroutines wind down asynchronously, so the check is retried until a
// deadline, and it names the goroutines left (goleak compares them by
// identity, not by count, so one that ended cannot hide one that leaked).
package goroutines

import (
	"time"

	"go.uber.org/goleak"
)

// Snapshot is the goroutines running now, to be ignored by Leaked.
func Snapshot() goleak.Option { return goleak.IgnoreCurrent() }

// IdleServerWorkers ignores fasthttp's idle workers, which a server
// keeps for a while after the requests they served (a worker serving a
// request has that request's functions on top of its stack, so it still
// counts).
var IdleServerWorkers = goleak.IgnoreTopFunction("github.com/valyala/fasthttp.(*workerPool).workerFunc")

// Leaked returns nil once no goroutine is running that was not in
// before (or that ignore names), or, if some still are when limit has
// passed, an error listing them with their stacks.
func Leaked(before goleak.Option, limit time.Duration, ignore ...goleak.Option) error {
	return LeakedSettling(nil, before, limit, ignore...)
}

// LeakedSettling is Leaked calling settle, if not nil, before each look:
// to drop state kept on purpose that holds goroutines (a client's idle
// keep-alive connections, whose number depends on how many requests once
// ran at the same time, which a loaded machine changes).
func LeakedSettling(settle func(), before goleak.Option, limit time.Duration, ignore ...goleak.Option) error {
	deadline := time.Now().Add(limit)
	opts := append([]goleak.Option{before}, ignore...)
	for {
		if settle != nil {
			settle()
		}
		err := goleak.Find(opts...) // retries for about a second itself
		if err == nil || time.Now().After(deadline) {
			return err
		}
	}
}
