// Tests of the scenarios' shared scaffolding: what measureLogged records
// and logs on success and on a failure with and without measured rows.
package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestMeasureLogged(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name            string
		err             error
		rows            bool
		wantEnd, logged bool
	}{
		{name: "success", rows: true, wantEnd: true},
		{name: "failure after rows", err: boom, rows: true, wantEnd: true, logged: true},
		{name: "failure before rows", err: boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var start, end string
			var log strings.Builder
			logf := func(format string, args ...any) { fmt.Fprintf(&log, format, args...) }
			ran := false
			err := measureLogged(&start, &end, func() error { ran = true; return tc.err },
				func() bool { return tc.rows }, func() string { return "REPORT SO FAR" }, logf)
			if !ran || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("ran %v, err %v; want measure run and err %v", ran, err, tc.err)
			}
			if start == "" || (end != "") != tc.wantEnd {
				t.Errorf("load start %q, end %q; want a start and an end: %v", start, end, tc.wantEnd)
			}
			if got := strings.Contains(log.String(), "partial report before the failure:\nREPORT SO FAR"); got != tc.logged {
				t.Errorf("log %q: partial report logged %v, want %v", log.String(), got, tc.logged)
			}
		})
	}
}
