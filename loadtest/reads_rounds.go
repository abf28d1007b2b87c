// Interleaved rounds of the reads scenario's CPU comparison: once every
// target of a small set has made its passes, the cache under test and the
// reference are read again in rounds, each pair back to back (signed
// against the reference read signed, unsigned against unsigned), the
// order turned round every round (ABBA). A ratio from two passes minutes
// apart carries whatever the shared machine did in between (the same
// nginx pass repeated differs by a third on a slow day); one from
// adjacent passes does not, and the median of several rounds is the
// figure the CPU goal is judged on.
package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// cpuRounds is how many rounds of each pair a set gets.
func cpuRounds(quick bool) int {
	if quick {
		return 3
	}
	return 5
}

// roundPassTime is how long each pass of a round reads at least (the set
// again and again): long enough for the 10 ms CPU ticks to resolve a few
// percent.
func roundPassTime(quick bool) time.Duration {
	if quick {
		return 300 * time.Millisecond
	}
	return time.Second
}

// roundSet is one small set's rounds: a pair per round, signed and
// unsigned, in the order measured.
type roundSet struct {
	set              string
	conc             int
	signed, unsigned []cpuPair
}

// roundRoles are the two comparisons a round makes: the subject's role
// and the reference's, signed first.
var roundRoles = [2][2]role{{roleSubject, roleReferenceSigned}, {roleSubjectUnsigned, roleReference}}

// measureRounds makes the rounds of set over targets with their clients;
// ok is false when the lineup has no subject and reference to compare.
func measureRounds(ctx context.Context, clients []*client, targets []target, set objectSet, quick bool,
	logf func(string, ...any)) (rs roundSet, ok bool, err error) {
	rs = roundSet{set: set.name, conc: set.conc}
	var idx [2][2]int
	for k, pair := range roundRoles {
		for j, ro := range pair {
			if idx[k][j] = roleIndex(targets, ro); idx[k][j] < 0 {
				return rs, false, nil
			}
		}
	}
	for i := range cpuRounds(quick) {
		for k, pair := range idx {
			p, err := measureRoundPair(ctx, clients, targets, set, pair, i%2 == 1, roundPassTime(quick))
			if err != nil {
				return rs, false, err
			}
			logf("%s c%d round %d: %s %v against %s %v", set.name, set.conc, i+1,
				targets[pair[0]].name, p.subj.cpu.perGet(p.subj.n).server, targets[pair[1]].name, p.ref.cpu.perGet(p.ref.n).server)
			if k == 0 {
				rs.signed = append(rs.signed, p)
			} else {
				rs.unsigned = append(rs.unsigned, p)
			}
		}
	}
	return rs, true, nil
}

// measureRoundPair reads set through the subject and the reference of
// pair (indexes into targets), the reference first when refFirst.
func measureRoundPair(ctx context.Context, clients []*client, targets []target, set objectSet, pair [2]int,
	refFirst bool, least time.Duration) (cpuPair, error) {
	order := []int{0, 1}
	if refFirst {
		order = []int{1, 0}
	}
	var got [2]smallResult
	for _, j := range order {
		t := targets[pair[j]]
		r, err := runMetered(ctx, clients[pair[j]], set, t, t.name+" round", least)
		if err != nil {
			return cpuPair{}, err
		}
		got[j] = r
	}
	return cpuPair{subj: got[0], ref: got[1]}, nil
}

// spread is the median of some ratios and their range.
type spread struct{ median, lo, hi float64 }

// spreadOf is the spread of xs (not empty; not modified).
func spreadOf(xs []float64) spread {
	return spread{median(xs), slices.Min(xs), slices.Max(xs)}
}

// String renders the spread as "0.93x (0.85-1.10x"; the caller adds to
// the parenthesis and closes it.
func (s spread) String() string { return fmt.Sprintf("%.2fx (%.2f-%.2fx", s.median, s.lo, s.hi) }

// roundsSummary is the spread of the subject's CPU per GET over the
// reference's, with the median CPU per GET of each side (µs).
type roundsSummary struct {
	spread
	n               int
	subjMed, refMed float64
}

// summarize returns the summary of pairs, ok false when none measured.
func summarize(pairs []cpuPair) (s roundsSummary, ok bool) {
	var ratios, subj, ref []float64
	for _, p := range pairs {
		if !p.have() {
			continue
		}
		a, b := p.times()
		if a <= 0 || b <= 0 {
			continue
		}
		ratios, subj, ref = append(ratios, a/b), append(subj, a), append(ref, b)
	}
	if len(ratios) == 0 {
		return s, false
	}
	return roundsSummary{spread: spreadOf(ratios), n: len(ratios), subjMed: median(subj), refMed: median(ref)}, true
}

// median is the middle of xs (the mean of the two middle ones for an even
// count); xs is not modified.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// String renders the summary: "0.93x (0.85-1.10x; 54 against 58 µs)".
func (s roundsSummary) String() string {
	return fmt.Sprintf("%s; %.0f against %.0f µs)", s.spread, s.subjMed, s.refMed)
}

// findRounds returns the rounds of the set and concurrency of like.
func (r *report) findRounds(like smallResult) (roundSet, bool) {
	for _, rs := range r.rounds {
		if rs.set == like.set && rs.conc == like.conc {
			return rs, true
		}
	}
	return roundSet{}, false
}

// roundsTable renders every set's rounds: the median ratio of CPU per
// GET, signed and unsigned, with its range.
func (r *report) roundsTable(b *strings.Builder) {
	subj, ref, ok := r.compared()
	if !ok || len(r.rounds) == 0 {
		return
	}
	S, R := subj.label(), ref.label()
	fmt.Fprintf(b, "## CPU per warm GET over interleaved rounds, %s against %s\n\n"+
		"Once every target has read a set, %[1]s and %[2]s read it again in %[3]d rounds, each pair back to back "+
		"(the order turned round each round) and each pass at least %[4]v of whole passes over the set, so that "+
		"the machine's drift between passes minutes apart leaves the ratio. The median of the rounds' ratios "+
		"(their range; the median CPU per GET of each side) is the figure the CPU goal above is judged on.\n\n"+
		"| objects | conc | %[1]s signed / %[2]s signed | %[1]s unsigned / %[2]s |\n|---|---:|---:|---:|\n",
		S, R, cpuRounds(r.quick), roundPassTime(r.quick))
	for _, rs := range r.rounds {
		fmt.Fprintf(b, "| %s | %d | %s | %s |\n", rs.set, rs.conc, summaryOrNA(rs.signed), summaryOrNA(rs.unsigned))
	}
	b.WriteString("\n")
}

// summaryOrNA renders pairs' summary, or "n/a".
func summaryOrNA(pairs []cpuPair) string {
	if s, ok := summarize(pairs); ok {
		return s.String()
	}
	return "n/a"
}
