// `granary flush`: waits until every write-back object under a bucket or
// prefix has reached the origin, with a progress line, through the node's
// admin API. It exits non-zero if the node reports a failure.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/granary-dev/granary/api"
)

func newFlushCmd(getenv Getenv) *cobra.Command {
	var cf clientFlags
	var timeout time.Duration
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "flush s3://BUCKET[/PREFIX]",
		Short: "Wait until write-back data under a bucket or prefix is at the origin",
		Long: `Wait until every object written to a write-back bucket (under PREFIX, if
given) before this call has been uploaded to the origin. A progress line
shows what is still waiting (with --json, the node's progress lines, raw
numbers, on stdout instead). Exits 0 once all of it is at the origin, 1 if
the node reports an upload it cannot complete (the data stays on the node
and is retried) or the timeout passes.`,
		Example: `  granary flush --endpoint http://127.0.0.1:9000 s3://checkpoints/run-42/`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bucket, prefix, err := parseS3URL(args[0])
			if err != nil {
				return usageError{err}
			}
			node, err := cf.Remote(getenv)
			if err != nil {
				return usageError{err}
			}
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			var raw io.Writer
			if asJSON {
				raw = cmd.OutOrStdout()
			}
			return flush(ctx, getenv, node, bucket, prefix, cmd.ErrOrStderr(), raw)
		},
	}
	cf.register(cmd.Flags())
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this `duration` (0: wait as long as it takes)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the node's progress lines (JSON, raw numbers) on stdout instead of the human ones")
	return cmd
}

// parseS3URL splits s3://bucket/prefix.
func parseS3URL(raw string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(raw, "s3://")
	if !ok {
		return "", "", fmt.Errorf("%q: want s3://BUCKET[/PREFIX]", raw)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("%q: no bucket", raw)
	}
	return bucket, prefix, nil
}

// flush runs node's flush and prints its progress to w, or, if raw is
// set, the node's lines as they are to raw.
func flush(ctx context.Context, getenv Getenv, node remote, bucket, prefix string, w, raw io.Writer) error {
	q := url.Values{"bucket": {bucket}, "prefix": {prefix}}
	resp, err := adminCall(ctx, getenv, node, "POST", "/_granary/flush", q)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	target := "s3://" + bucket + "/" + prefix
	sc := bufio.NewScanner(resp.Body)
	p := flushProgress{w: w, target: target, start: time.Now()}
	for sc.Scan() {
		var l api.FlushLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return fmt.Errorf("flush: bad line from node: %q", sc.Text())
		}
		if raw != nil {
			fmt.Fprintf(raw, "%s\n", sc.Bytes())
		}
		switch {
		case l.Error != "":
			return fmt.Errorf("flush %s: %s", target, l.Error)
		case l.Done:
			if raw == nil {
				fmt.Fprintf(w, "flush %s: done, %d object(s) uploaded in %v\n", target, l.Uploaded, time.Since(p.start).Round(time.Millisecond))
			}
			return nil
		}
		if raw == nil {
			p.show(l)
		}
	}
	if err := sc.Err(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("flush %s: %w", target, ctx.Err())
		}
		return fmt.Errorf("flush %s: %w", target, err)
	}
	return errors.New("flush " + target + ": the node closed the stream before it finished")
}

// flushProgress prints the human progress lines of a flush: a line when
// something changed, else one every quiet period, with the rate at which
// the data waiting went down.
type flushProgress struct {
	w       io.Writer
	target  string
	start   time.Time
	first   int64 // bytes waiting at the first line, -1 before it
	seen    bool
	shown   api.FlushLine
	shownAt time.Time
}

func (p *flushProgress) show(l api.FlushLine) {
	if !p.seen {
		p.seen, p.first = true, l.PendingBytes
	}
	if l == p.shown && time.Since(p.shownAt) < flushQuiet {
		return
	}
	p.shown, p.shownAt = l, time.Now()
	rate := ""
	if done := p.first - l.PendingBytes; done > 0 {
		rate = ", " + humanRate(float64(done)/max(time.Since(p.start).Seconds(), 0.001))
	}
	fmt.Fprintf(p.w, "flush %s: %d object(s), %s waiting; %d uploaded%s%s\n",
		p.target, l.Pending, humanBytes(l.PendingBytes), l.Uploaded, rate, lastError(l.LastError))
}

// flushQuiet is how often an unchanged progress line is repeated.
const flushQuiet = 10 * time.Second

func lastError(e string) string {
	if e == "" {
		return ""
	}
	return " (last error: " + e + ")"
}
