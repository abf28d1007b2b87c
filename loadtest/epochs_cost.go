// What each epoch cost the node, per sample: CPU and minor page faults
// (pages touched for the first time), figures that hold on any machine
// where throughput does not.
package main

import (
	"fmt"
	"strings"
	"time"
)

// nodeCost is a node's CPU and minor page faults over an epoch.
type nodeCost struct {
	cpu    time.Duration
	faults int64
}

// costOf reads g's CPU and faults so far.
func costOf(g *granaryProc) (nodeCost, error) {
	cpu, err := g.cpuTime()
	if err != nil {
		return nodeCost{}, err
	}
	faults, err := g.faults()
	return nodeCost{cpu: cpu, faults: faults}, err
}

func (c nodeCost) minus(o nodeCost) nodeCost {
	return nodeCost{cpu: c.cpu - o.cpu, faults: c.faults - o.faults}
}

// perSample is c spread over n samples.
func (c nodeCost) perSample(n int) (time.Duration, float64) {
	if n <= 0 {
		return 0, 0
	}
	return c.cpu / time.Duration(n), float64(c.faults) / float64(n)
}

// costTable renders the node's CPU and faults per sample of every
// epoch that measured them.
func (r *epochsReport) costTable(b *strings.Builder) {
	var rows []epochRow
	for _, row := range r.rows {
		if row.cost.cpu > 0 {
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("\n## What each epoch cost the node\n\nCPU (user and system, from /proc) and minor page faults (pages the process touched for " +
		"the first time, each one backed and zeroed by the kernel) per sample. A cold epoch whose samples land in RAM touches " +
		"a new page for every 4 KiB it keeps.\n\n| link | configuration | epoch | node CPU per sample | page faults per sample |\n|---|---|---|---:|---:|\n")
	for _, row := range rows {
		cpu, faults := row.cost.perSample(row.files)
		link := row.link
		if link == "" {
			link = "capped"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %v | %.1f |\n", link, row.config, row.epoch, cpu.Round(time.Microsecond), faults)
	}
	b.WriteString("\n")
}
