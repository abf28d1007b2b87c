// `granary pin`: pins a bucket prefix on a node (its cached data is never
// evicted), unpins it, or lists the pins, through the admin API.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/granary-dev/granary/store/pins"
)

func newPinCmd(getenv Getenv) *cobra.Command {
	var cf clientFlags
	var remove, list bool
	cmd := &cobra.Command{
		Use:   "pin s3://BUCKET[/PREFIX] | --list",
		Short: "Pin a prefix so its cached data is never evicted (or unpin it, or list pins)",
		Long: `Pin s3://BUCKET/PREFIX on the node: from now on the cache tiers never evict
data under it, whatever the pressure and the eviction policy (a tier full
of pinned data declines new chunks instead). Pinning fetches nothing: warm
the prefix with 'granary warm' to bring it in. Pins made here survive
restarts; pins set in the configuration file can only be removed there.
Prints the node's pins.`,
		Example: `  granary pin --endpoint http://127.0.0.1:9000 s3://datasets/imagenet/train/
  granary pin --endpoint http://127.0.0.1:9000 --remove s3://datasets/imagenet/train/
  granary pin --endpoint http://127.0.0.1:9000 --list`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if list != (len(args) == 0) || (list && remove) {
				return usageError{fmt.Errorf("give one s3://BUCKET[/PREFIX], or --list alone")}
			}
			node, err := cf.Remote(getenv)
			if err != nil {
				return usageError{err}
			}
			method, q := "GET", url.Values{}
			if !list {
				bucket, prefix, err := parseS3URL(args[0])
				if err != nil {
					return usageError{err}
				}
				method, q = "POST", url.Values{"bucket": {bucket}, "prefix": {prefix}}
				if remove {
					method = "DELETE"
				}
			}
			resp, err := adminCall(cmd.Context(), getenv, node, method, "/_granary/pin", q)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			var pins []pins.Pin
			if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&pins); err != nil {
				return fmt.Errorf("pin: bad answer from the node: %w", err)
			}
			return printPins(cmd.OutOrStdout(), pins)
		},
	}
	cf.register(cmd.Flags())
	cmd.Flags().BoolVar(&remove, "remove", false, "unpin the prefix")
	cmd.Flags().BoolVar(&list, "list", false, "list the node's pins")
	return cmd
}

func printPins(w io.Writer, pins []pins.Pin) error {
	if len(pins) == 0 {
		_, err := fmt.Fprintln(w, "no pins")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PINNED\tFROM")
	for _, p := range pins {
		from := "admin API"
		if p.Configured {
			from = "configuration"
		}
		fmt.Fprintf(tw, "s3://%s/%s\t%s\n", p.Bucket, p.Prefix, from)
	}
	return tw.Flush()
}
