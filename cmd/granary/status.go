// `granary status`: a node's tiers and, per bucket, what it knows and
// holds (objects, bytes, cached share per tier, hit rate) and its
// warm-ups, as text or JSON, through the admin API.
package main

import (
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/granary-dev/granary/ops"
)

func newStatusCmd(getenv Getenv) *cobra.Command {
	var cf clientFlags
	var asJSON, object bool
	cmd := &cobra.Command{
		Use:   "status [s3://BUCKET[/PREFIX]]",
		Short: "Show what a node caches: tiers, buckets, cached share, hit rate, warm-ups",
		Long: `Show a node's cache tiers (used, capacity, evictions, chunks declined by
the eviction policy) and, for every bucket it knows (or the one given, under
PREFIX), the objects and bytes its catalog holds, how much of them is
cached and in which tier, its hit rate since the node started, and its
warm-up jobs. A cluster member reports every live member this way, and
with --object, for the object s3://BUCKET/KEY names, how much of it each
member holds (so a scheduler can place a job next to its data).
--json prints the node's answer as it is.`,
		Example: `  granary status --endpoint http://127.0.0.1:9000 s3://datasets/imagenet/`,
		Args:    maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{}
			if len(args) == 1 {
				bucket, prefix, err := parseS3URL(args[0])
				if err != nil {
					return usageError{err}
				}
				q.Set("bucket", bucket)
				q.Set("prefix", prefix)
				if object {
					if prefix == "" {
						return usageError{fmt.Errorf("--object: %s names no object", args[0])}
					}
					q.Del("prefix")
					q.Set("key", prefix)
				}
			} else if object {
				return usageError{fmt.Errorf("--object: give the object as s3://BUCKET/KEY")}
			}
			node, err := cf.Remote(getenv)
			if err != nil {
				return usageError{err}
			}
			resp, err := adminCall(cmd.Context(), getenv, node, "GET", "/_granary/status", q)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
			if err != nil {
				return err
			}
			if asJSON {
				_, err = cmd.OutOrStdout().Write(append(body, '\n'))
				return err
			}
			return printAnswer(cmd.OutOrStdout(), body)
		},
	}
	cf.register(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the node's JSON answer")
	cmd.Flags().BoolVar(&object, "object", false, "the s3:// URL names an object: report which nodes hold it")
	return cmd
}

// printStatus renders st as three tables: tiers, buckets, warm-ups.
func printStatus(w io.Writer, st ops.Status) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "node up since %s\n%s\nTIER\tUSED\tCAPACITY\tCHUNKS\tEVICTED\tDECLINED\n", st.Started.Format(time.RFC3339), originLine(st.Origin))
	for _, t := range st.Tiers {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\n", t.Name, humanBytes(t.UsedBytes), humanBytes(t.CapacityBytes), t.Chunks, t.Evictions, t.Declined)
	}
	fmt.Fprintf(tw, "\nBUCKET\tOBJECTS\tBYTES\tCACHED\tRAM\tDISK\tQUOTA\tHIT RATE\tPINNED\tLISTED PREFIXES\n")
	for _, b := range st.Buckets {
		var cov []string
		for _, c := range b.Covered {
			cov = append(cov, fmt.Sprintf("%q (%s ago)", c.Prefix, time.Since(c.At).Round(time.Second)))
		}
		name := b.Bucket
		if b.Prefix != "" {
			name += "/" + b.Prefix
		}
		quota := "-"
		if b.Quota > 0 {
			quota = humanBytes(b.Quota)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.1f%%\t%s\t%s\t%s\t%s\t%s\t%s\n", name, b.Objects, humanBytes(b.Bytes), b.CachedPercent,
			humanBytes(b.TierBytes["ram"]), humanBytes(b.TierBytes["disk"]), quota, hitRate(b), strings.Join(b.Pinned, ", "), strings.Join(cov, ", "))
	}
	if len(st.Warm) > 0 {
		fmt.Fprintf(tw, "\nWARM-UP\tTARGET\tSTATE\tLISTED\tFETCHED\tALREADY CACHED\tFAILED\n")
		for _, j := range st.Warm {
			fmt.Fprintf(tw, "%s\ts3://%s/%s\t%s\t%d\t%d (%s)\t%d\t%d\n", j.ID, j.Spec.Bucket, j.Spec.Prefix, j.State,
				j.Listed, j.Fetched, humanBytes(j.FetchedBytes), j.Cached, j.Failed)
		}
	}
	if o := st.Object; o != nil {
		fmt.Fprintf(tw, "\nOBJECT s3://%s/%s (%s, etag %s): %s held (ram %s, disk %s)\n", o.Bucket, o.Key, humanBytes(o.Size), o.ETag,
			humanBytes(o.Held), humanBytes(o.ByTier["ram"]), humanBytes(o.ByTier["disk"]))
	}
	return tw.Flush()
}

// hitRate labels a bucket's hit rate with what it is a share of: the
// chunk reads the node looked up in its tiers ("-" before the first).
func hitRate(b ops.BucketStatus) string {
	if b.Hits+b.Misses == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%% of %d chunk reads", 100*b.HitRate, b.Hits+b.Misses)
}
