// Sizes and rates as the client commands print them for people ("1.2
// GiB", "85 MB/s"); --json prints the node's raw numbers instead.
package main

import "github.com/dustin/go-humanize"

// humanBytes renders a byte count in binary units: "512 B", "1.2 GiB".
func humanBytes(n int64) string { return humanize.IBytes(uint64(max(n, 0))) }

// humanRate renders bytes per second in decimal units: "85 MB/s".
func humanRate(perSecond float64) string {
	return humanize.Bytes(uint64(max(perSecond, 0))) + "/s"
}
