// Progress of `granary warm`: a bar redrawn in place on a terminal, plain
// lines (one when something changed, at most every few seconds)
// otherwise.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/granary-dev/granary/ops"
)

// warmLineEvery spaces the plain progress lines.
const warmLineEvery = 5 * time.Second

type warmProgress struct {
	w       io.Writer
	tty     bool
	lastAt  time.Time
	lastMsg string
}

func newWarmProgress(w io.Writer) *warmProgress {
	f, ok := w.(*os.File)
	return &warmProgress{w: w, tty: ok && term.IsTerminal(int(f.Fd()))}
}

// update shows a running job's progress.
func (p *warmProgress) update(st ops.WarmStatus) {
	msg := warmLine(st, time.Now())
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", msg)
		return
	}
	if msg != p.lastMsg && time.Since(p.lastAt) >= warmLineEvery {
		fmt.Fprintln(p.w, msg)
		p.lastAt, p.lastMsg = time.Now(), msg
	}
}

// done shows the job's final figures.
func (p *warmProgress) done(st ops.WarmStatus) {
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
	took := st.Ended.Sub(st.Started).Round(time.Millisecond)
	fmt.Fprintf(p.w, "warm s3://%s/%s: %s in %v: %d objects listed (%s), %d changed, %d removed; %d fetched (%s at %s), %d already cached, %d failed\n",
		st.Spec.Bucket, st.Spec.Prefix, st.State, took, st.Listed, humanBytes(st.ListedBytes), st.Changed, st.Removed,
		st.Fetched, humanBytes(st.FetchedBytes), humanRate(float64(st.FetchedBytes)/max(took.Seconds(), 0.001)), st.Cached, st.Failed)
}

// warmLine renders a running job: the listing count while it lists, then
// a bar of the bytes fetched, the rate and the time left.
func warmLine(st ops.WarmStatus, now time.Time) string {
	head := fmt.Sprintf("warm s3://%s/%s: ", st.Spec.Bucket, st.Spec.Prefix)
	listed := fmt.Sprintf("%d listed", st.Listed)
	if st.Listing {
		listed += " (listing)"
	}
	if st.Spec.MetadataOnly {
		return head + listed
	}
	const width = 24
	frac := 0.0
	if st.QueuedBytes > 0 {
		frac = float64(st.FetchedBytes) / float64(st.QueuedBytes)
	}
	n := int(frac * width)
	bar := "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
	rate := float64(st.FetchedBytes) / max(now.Sub(st.Started).Seconds(), 0.001)
	eta := "?"
	if rate > 0 && !st.Listing {
		eta = (time.Duration(float64(st.QueuedBytes-st.FetchedBytes)/rate) * time.Second).Round(time.Second).String()
	}
	return fmt.Sprintf("%s%s %d/%d objects, %s of %s, %s, ETA %s; %s, %d cached, %d failed", head, bar,
		st.Fetched, st.Queued, humanBytes(st.FetchedBytes), humanBytes(st.QueuedBytes), humanRate(rate), eta, listed, st.Cached, st.Failed)
}
