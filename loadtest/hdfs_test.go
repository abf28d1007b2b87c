// Tests of the hdfs-epochs scenario's pure logic: hdfsd's ready line and
// the report's comparison of gateway epoch 2 with direct epoch 2.
package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseHDFSDReady(t *testing.T) {
	for _, tc := range []struct {
		line   string
		nn, dn string
		ok     bool
	}{
		{"hdfsd ready nn=127.0.0.1:9000 dn=127.0.0.1:9866", "127.0.0.1:9000", "127.0.0.1:9866", true},
		{"hdfsd ready dn=127.0.0.1:9866 nn=127.0.0.1:9000", "", "", false},
		{"hdfsd ready nn=127.0.0.1:9000", "", "", false},
		{"hdfsd ready nn= dn=127.0.0.1:9866", "", "", false},
		{"hdfsd starting nn=a:1 dn=b:2", "", "", false},
	} {
		nn, dn, ok := parseHDFSDReady(tc.line)
		if nn != tc.nn || dn != tc.dn || ok != tc.ok {
			t.Errorf("parseHDFSDReady(%q) = %q, %q, %v; want %q, %q, %v", tc.line, nn, dn, ok, tc.nn, tc.dn, tc.ok)
		}
	}
}

func TestHDFSReportFigure(t *testing.T) {
	row := func(config, epoch string, perSec float64, hits, misses float64) epochRow {
		return epochRow{config: config, epoch: epoch, files: 1000, elapsed: time.Duration(1000 / perSec * float64(time.Second)),
			cache: cacheCounts{hits: hits, misses: misses}}
	}
	r := &hdfsReport{plan: quickHDFSPlan(), epochsReport: &epochsReport{plan: quickHDFSPlan().epochsPlan, quick: true, rows: []epochRow{
		row(cfgDirect, "1", 100, 0, 0), row(cfgDirect, "2", 125, 0, 0),
		row(cfgHDFSGateway, "1", 5, 0, 1000), row(cfgHDFSGateway, "2", 2500, 1000, 0),
	}}}
	md := r.markdown()
	for _, want := range []string{"20.0x direct (2500 vs 125 samples/s)", "yes (for comparison)", "100.00% (origin side 100.00%)", "0.05x direct (5 vs 100 samples/s) | ≥ 0.9x | **no**"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	r.rows = r.rows[:3] // no gateway epoch 2
	if md := r.markdown(); !strings.Contains(md, "| n/a | none (epochs scenario: ≥ 10x) | n/a |") {
		t.Errorf("report without gateway epoch 2:\n%s", md)
	}
}
