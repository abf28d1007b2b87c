// `granary warm`: loads a bucket prefix's listing into a node's catalog
// and, unless --metadata-only, its data into the node's cache, through
// the admin API, showing progress until the job ends. Interrupting the
// command cancels the job.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/granary-dev/granary/ops"
)

// warmPoll is how often the command asks the node for progress.
const warmPoll = 500 * time.Millisecond

type warmFlags struct {
	client       clientFlags
	metadataOnly bool
	parallel     int
	timeout      time.Duration
	strict       bool // a prefix with no objects is a failure
	json         bool // the final job status, raw, on stdout
}

func newWarmCmd(getenv Getenv) *cobra.Command {
	var f warmFlags
	cmd := &cobra.Command{
		Use:   "warm s3://BUCKET[/PREFIX]",
		Short: "Load a prefix's listing and data into a node's cache before training",
		Long: `Load the listing of every object under s3://BUCKET/PREFIX into the node's
catalog (LIST under the prefix is then answered without the origin, as the
bucket's freshness rule allows) and, unless --metadata-only, the objects
themselves into its cache. A repeated warm-up fetches only objects that
changed at the origin and drops the cached data of deleted ones.

Shows a progress bar on a terminal, progress lines otherwise (on stderr;
--json prints the job's final status, raw numbers, on stdout). Exits 0
when everything was loaded; 1 naming what failed, or if the cache cannot
hold the prefix (the listing is loaded, the data only up to the cache's
size). A prefix with no objects at the origin is said so, and exits 1
with --strict. Interrupting the command cancels the warm-up.`,
		Example: `  granary warm --endpoint http://127.0.0.1:9000 s3://datasets/imagenet/train/`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bucket, prefix, err := parseS3URL(args[0])
			if err != nil {
				return usageError{err}
			}
			node, err := f.client.Remote(getenv)
			if err != nil {
				return usageError{err}
			}
			if f.parallel < 1 || f.parallel > 256 {
				return usageError{fmt.Errorf("--parallel %d: want 1 to 256", f.parallel)}
			}
			ctx := cmd.Context()
			if f.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, f.timeout)
				defer cancel()
			}
			w := &warmer{getenv: getenv, node: node, out: cmd.ErrOrStderr(), strict: f.strict}
			if f.json {
				w.json = cmd.OutOrStdout()
			}
			return w.run(ctx, ops.WarmSpec{Bucket: bucket, Prefix: prefix, MetadataOnly: f.metadataOnly, Parallel: f.parallel})
		},
	}
	f.client.register(cmd.Flags())
	cmd.Flags().BoolVar(&f.metadataOnly, "metadata-only", false, "load the listing only, no data")
	cmd.Flags().IntVar(&f.parallel, "parallel", 16, "objects fetched at once (`N`, 1 to 256)")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 0, "cancel the warm-up after this `duration` (0: no limit)")
	cmd.Flags().BoolVar(&f.strict, "strict", false, "exit 1 if the prefix holds no objects at the origin")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the job's final status as JSON (raw numbers) on stdout")
	return cmd
}

// warmer runs one warm-up from the command line.
type warmer struct {
	getenv Getenv
	node   remote
	out    io.Writer // progress and the summary
	json   io.Writer // the final status as JSON, if set
	strict bool
}

// run starts the job, shows its progress, and returns its verdict.
func (w *warmer) run(ctx context.Context, spec ops.WarmSpec) error {
	q := url.Values{"bucket": {spec.Bucket}, "prefix": {spec.Prefix},
		"metadata-only": {strconv.FormatBool(spec.MetadataOnly)}, "parallel": {strconv.Itoa(spec.Parallel)}}
	st, err := w.call(ctx, "POST", q)
	if err != nil {
		return err
	}
	show := newWarmProgress(w.out)
	tick := time.NewTicker(warmPoll)
	defer tick.Stop()
	for st.State == ops.WarmRunning {
		show.update(st)
		select {
		case <-ctx.Done():
			return w.cancel(st.ID, ctx.Err())
		case <-tick.C:
		}
		if st, err = w.call(ctx, "GET", url.Values{"id": {st.ID}}); err != nil {
			if ctx.Err() != nil {
				return w.cancel(st.ID, ctx.Err())
			}
			return err
		}
	}
	show.done(st)
	if w.json != nil {
		if err := json.NewEncoder(w.json).Encode(st); err != nil {
			return err
		}
	}
	if st.State == ops.WarmDone && st.Listed == 0 {
		fmt.Fprintf(w.out, "warm s3://%s/%s: no objects under this prefix at the origin (is the bucket or prefix misspelt?)\n", st.Spec.Bucket, st.Spec.Prefix)
		if w.strict {
			return fmt.Errorf("warm-up of s3://%s/%s: no objects (--strict)", st.Spec.Bucket, st.Spec.Prefix)
		}
	}
	return warmVerdict(st)
}

// cancel cancels job id after the command was interrupted or timed out.
func (w *warmer) cancel(id string, why error) error {
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if _, err := w.call(ctx, "DELETE", url.Values{"id": {id}}); err != nil {
		return fmt.Errorf("warm-up %s: %w; cancelling it failed: %w", id, why, err)
	}
	return fmt.Errorf("warm-up %s cancelled: %w", id, why)
}

// call makes one admin call and decodes the job status it answers.
func (w *warmer) call(ctx context.Context, method string, q url.Values) (ops.WarmStatus, error) {
	var st ops.WarmStatus
	resp, err := adminCall(ctx, w.getenv, w.node, method, "/_granary/warm", q)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&st); err != nil {
		return st, fmt.Errorf("warm: bad answer from the node: %w", err)
	}
	if st.ID == "" {
		return st, errors.New("warm: the node answered without a job")
	}
	return st, nil
}

// warmVerdict is nil for a job done, else an error naming what failed.
func warmVerdict(st ops.WarmStatus) error {
	if st.State == ops.WarmDone {
		return nil
	}
	msg := fmt.Sprintf("warm-up of s3://%s/%s %s: %s", st.Spec.Bucket, st.Spec.Prefix, st.State, st.Error)
	if len(st.Failures) > 0 {
		msg += "\n  " + strings.Join(st.Failures, "\n  ")
		if int64(len(st.Failures)) < st.Failed {
			msg += fmt.Sprintf("\n  ... and %d more", st.Failed-int64(len(st.Failures)))
		}
	}
	return errors.New(msg)
}
