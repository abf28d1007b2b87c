// Progress of `granary warm`: on a terminal, a bar redrawn in place that
// fits the terminal's width (github.com/schollz/progressbar, with a
// description cut to the room the bar leaves); otherwise plain lines, one
// when something changed, at most every few seconds.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/granary-dev/granary/ops"
)

// warmLineEvery spaces the plain progress lines.
const warmLineEvery = 5 * time.Second

type warmProgress struct {
	w       io.Writer
	tty     *os.File                 // the terminal w is; nil if none
	bar     *progressbar.ProgressBar // on tty, from the first update
	lastAt  time.Time
	lastMsg string
}

func newWarmProgress(w io.Writer) *warmProgress {
	p := &warmProgress{w: w}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.tty = f
	}
	return p
}

// update shows a running job's progress.
func (p *warmProgress) update(st ops.WarmStatus) {
	if p.tty != nil {
		p.redraw(st)
		return
	}
	msg := warmLine(st, time.Now())
	if msg != p.lastMsg && time.Since(p.lastAt) >= warmLineEvery {
		fmt.Fprintln(p.w, msg)
		p.lastAt, p.lastMsg = time.Now(), msg
	}
}

// done shows the job's final figures.
func (p *warmProgress) done(st ops.WarmStatus) {
	if p.bar != nil {
		_ = p.bar.Clear() // a terminal that went away only loses the bar
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

// warmBarRoom is what the bar's own part takes at the least: the percent,
// 8 columns of bar, the rate and the times ("100% |........| (1023.9
// MiB/s) [59m59s:59m59s]"). The description gets the rest of the
// terminal's width; the library shrinks the bar to fit what is left.
const warmBarRoom = 48

// redraw draws st on the terminal, cut to its width now (it may have
// been resized since the last redraw).
func (p *warmProgress) redraw(st ops.WarmStatus) {
	cols, _, err := term.GetSize(int(p.tty.Fd()))
	if err != nil || cols <= 0 {
		cols = 80
	}
	if p.bar == nil {
		total := int64(-1) // a spinner: a metadata-only job fetches no bytes
		if !st.Spec.MetadataOnly {
			total = 1 // until the listing queues bytes
		}
		p.bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(p.tty), progressbar.OptionShowBytes(true),
			progressbar.OptionUseIECUnits(true), progressbar.OptionSetWidth(24), progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(0), progressbar.OptionSetRenderBlankState(true))
	}
	room := cols - warmBarRoom
	if st.Spec.MetadataOnly {
		room = cols - 8 // the spinner and its brackets
	} else {
		p.bar.ChangeMax64(max(st.QueuedBytes, 1))
	}
	p.bar.Describe(warmDescription(st, room))
	_ = p.bar.Set64(st.FetchedBytes)
}

// warmDescription is the most of st's figures that fits width columns:
// the prefix, the objects and bytes, the cached and failed counts, then
// less, down to nothing.
func warmDescription(st ops.WarmStatus, width int) string {
	listing := ""
	if st.Listing {
		listing = " (listing)"
	}
	head := fmt.Sprintf("warm s3://%s/%s: ", st.Spec.Bucket, st.Spec.Prefix)
	objects := fmt.Sprintf("%d/%d objects", st.Fetched, st.Queued)
	bytes := fmt.Sprintf(" (%s/%s)", humanBytes(st.FetchedBytes), humanBytes(st.QueuedBytes))
	rest := fmt.Sprintf(", %d cached, %d failed", st.Cached, st.Failed)
	candidates := []string{head + objects + bytes + rest + listing, objects + bytes + rest + listing, objects + rest, objects}
	if st.Spec.MetadataOnly {
		listed := fmt.Sprintf("%d listed", st.Listed)
		candidates = []string{head + listed + listing, listed + listing, listed}
	}
	for _, d := range candidates {
		if len(d)+1 <= width {
			return d + " "
		}
	}
	return ""
}
