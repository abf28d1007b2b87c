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
	cmd := &cobra.Command{
		Use:   "flush s3://BUCKET[/PREFIX]",
		Short: "Wait until write-back data under a bucket or prefix is at the origin",
		Long: `Wait until every object written to a write-back bucket (under PREFIX, if
given) before this call has been uploaded to the origin. A progress line
shows what is still waiting. Exits 0 once all of it is at the origin, 1 if
the node reports an upload it cannot complete (the data stays on the node
and is retried) or the timeout passes.`,
		Example: `  granary flush --endpoint http://127.0.0.1:9000 s3://checkpoints/run-42/`,
		Args:    cobra.ExactArgs(1),
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
			return flush(ctx, getenv, node, bucket, prefix, cmd.ErrOrStderr())
		},
	}
	cf.register(cmd.Flags())
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this `duration` (0: wait as long as it takes)")
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

// flush runs node's flush and prints its progress to w.
func flush(ctx context.Context, getenv Getenv, node remote, bucket, prefix string, w io.Writer) error {
	q := url.Values{"bucket": {bucket}, "prefix": {prefix}}
	resp, err := adminCall(ctx, getenv, node, "POST", "/_granary/flush", q)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	target := "s3://" + bucket + "/" + prefix
	sc := bufio.NewScanner(resp.Body)
	var shown api.FlushLine
	var shownAt time.Time
	for sc.Scan() {
		var l api.FlushLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return fmt.Errorf("flush: bad line from node: %q", sc.Text())
		}
		switch {
		case l.Error != "":
			return fmt.Errorf("flush %s: %s", target, l.Error)
		case l.Done:
			fmt.Fprintf(w, "flush %s: done, %d object(s) uploaded\n", target, l.Uploaded)
			return nil
		}
		// A line when something changed, else one every quiet period.
		if l == shown && time.Since(shownAt) < flushQuiet {
			continue
		}
		shown, shownAt = l, time.Now()
		fmt.Fprintf(w, "flush %s: %d object(s), %s waiting; %d uploaded%s\n",
			target, l.Pending, Size(l.PendingBytes), l.Uploaded, lastError(l.LastError))
	}
	if err := sc.Err(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("flush %s: %w", target, ctx.Err())
		}
		return fmt.Errorf("flush %s: %w", target, err)
	}
	return errors.New("flush " + target + ": the node closed the stream before it finished")
}

// flushQuiet is how often an unchanged progress line is repeated.
const flushQuiet = 10 * time.Second

func lastError(e string) string {
	if e == "" {
		return ""
	}
	return " (last error: " + e + ")"
}
