// `granary status` of a cluster member: every live member's report, and
// where an object's bytes are held.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/granary-dev/granary/api"
	"github.com/granary-dev/granary/ops"
)

// printAnswer renders a node's status answer: a single node's report, or
// a cluster member's report of every member.
func printAnswer(w io.Writer, body []byte) error {
	var cs api.ClusterStatus
	if err := json.Unmarshal(body, &cs); err == nil && cs.Self != "" {
		return printCluster(w, cs)
	}
	var st ops.Status
	if err := json.Unmarshal(body, &st); err != nil {
		return fmt.Errorf("status: bad answer from the node: %w", err)
	}
	return printStatus(w, st)
}

// printCluster renders the members table, the object's location if one
// was asked for, then each member's own report.
func printCluster(w io.Writer, cs api.ClusterStatus) error {
	reports := make([]*ops.Status, len(cs.Nodes))
	for i, n := range cs.Nodes {
		var st ops.Status
		if n.Healthy && json.Unmarshal(n.Status, &st) == nil {
			reports[i] = &st
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "cluster seen from %s: %d members\n\nNODE\tADDRESS\tHEALTH\tRAM USED\tDISK USED\n", cs.Self, len(cs.Nodes))
	for i, n := range cs.Nodes {
		health, ram, dsk := "healthy", "-", "-"
		if reports[i] == nil {
			health = "unreachable: " + n.Error
		} else {
			ram, dsk = tierUsed(reports[i], "ram"), tierUsed(reports[i], "disk")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", n.ID, n.Addr, health, ram, dsk)
	}
	printAccessSplit(tw, reports)
	printLocation(tw, cs, reports)
	if err := tw.Flush(); err != nil {
		return err
	}
	for i, n := range cs.Nodes {
		if reports[i] == nil {
			continue
		}
		fmt.Fprintf(w, "\n== node %s (%s)\n", n.ID, n.Addr)
		if err := printStatus(w, *reports[i]); err != nil {
			return err
		}
	}
	return nil
}

// printAccessSplit warns when members accept different users: a key
// would then work on some nodes and not others.
func printAccessSplit(w io.Writer, reports []*ops.Status) {
	seen := map[string]bool{}
	for _, st := range reports {
		if st != nil && st.Access != "" {
			seen[st.Access] = true
		}
	}
	if len(seen) > 1 {
		fmt.Fprintf(w, "\nWARNING: members hold %d different sets of users (compare the users file and key file on each node)\n", len(seen))
	}
}

// printLocation adds the table of which members hold the object asked
// about, if any.
func printLocation(tw io.Writer, cs api.ClusterStatus, reports []*ops.Status) {
	header := false
	for i, n := range cs.Nodes {
		st := reports[i]
		if st == nil || st.Object == nil {
			continue
		}
		o := st.Object
		if !header {
			fmt.Fprintf(tw, "\nOBJECT s3://%s/%s (%s, etag %s)\nNODE\tHELD\tRAM\tHOT\tDISK\n", o.Bucket, o.Key, humanBytes(o.Size), o.ETag)
			header = true
		}
		pct := 0.0
		if o.Size > 0 {
			pct = 100 * float64(o.Held) / float64(o.Size)
		}
		fmt.Fprintf(tw, "%s\t%.1f%%\t%s\t%s\t%s\n", n.ID, pct, humanBytes(o.ByTier["ram"]), humanBytes(o.ByTier["hot"]+o.ByTier["hot-disk"]), humanBytes(o.ByTier["disk"]))
	}
}

func tierUsed(st *ops.Status, name string) string {
	for _, t := range st.Tiers {
		if t.Name == name {
			return fmt.Sprintf("%s of %s", humanBytes(t.UsedBytes), humanBytes(t.CapacityBytes))
		}
	}
	return "-"
}
