// The epochs scenario's warm-up row: `granary warm` on the data set before
// the first epoch, timed, with the node's cache counters over it.
package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"
)

// warmUp runs `granary warm` on the data set's prefix and adds its row.
// It reports false, with an n/a row, when the binary has no warm command.
func (r *epochsRun) warmUp(ctx context.Context, c gwConfig, g *granaryProc, before metricSet) (bool, error) {
	cmd := exec.CommandContext(ctx, r.bin, "warm", "--endpoint", g.endpoint(), "s3://"+epochsBucket+"/"+epochsPrefix)
	cmd.Env = append(os.Environ(), "GRANARY_ACCESS_KEY="+granaryAccess, "GRANARY_SECRET_KEY="+granarySecret)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start)
	if err != nil {
		if !hasWarmCommand(ctx, r.bin) {
			r.add(epochRow{config: c.name, epoch: epochWarmUp, note: "n/a (no warm command in this build)"})
			return false, nil
		}
		return false, fmt.Errorf("granary warm: %v\n%s", err, out.Bytes())
	}
	after, err := scrapeMetrics(ctx, g.endpoint())
	if err != nil {
		return false, err
	}
	r.add(epochRow{config: c.name, epoch: epochWarmUp, files: r.plan.files, elapsed: elapsed,
		cache: after.cache().minus(before.cache()), originGets: after.originGets() - before.originGets()})
	return true, nil
}

// hasWarmCommand tells whether bin has a warm subcommand: without one,
// `bin warm` fails with cobra's unknown command error (and `bin warm
// --endpoint ...` with an unknown flag error, as the root has no flags).
func hasWarmCommand(ctx context.Context, bin string) bool {
	out, err := exec.CommandContext(ctx, bin, "warm").CombinedOutput()
	return err == nil || !bytes.Contains(out, []byte(`unknown command "warm"`))
}
