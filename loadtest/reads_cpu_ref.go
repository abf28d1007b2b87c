// The reads report's CPU comparison with the reference cache: the cache
// under test's processes against the reference's, per warm GET, each
// pair read with the same requests (signed against the reference read
// with the signed GETs it ignores, unsigned against unsigned), so neither
// side's figure carries a cheaper or dearer client.
package main

import (
	"fmt"
	"strings"
	"time"
)

// cpuPair is one comparison of CPU per warm GET: the subject's pass and
// the reference's pass read with the same requests.
type cpuPair struct{ subj, ref smallResult }

// have tells whether both passes ran and both processes were measured.
func (p cpuPair) have() bool {
	return p.subj.n > 0 && p.ref.n > 0 && p.subj.cpu.serverMeasured && p.ref.cpu.serverMeasured
}

// times returns the subject's and the reference's CPU per GET, in µs
// (unrounded: the ratio and the goal use them as they are).
func (p cpuPair) times() (subj, ref float64) {
	perGet := func(r smallResult) float64 {
		return float64(r.cpu.perGet(r.n).server) / float64(time.Microsecond)
	}
	return perGet(p.subj), perGet(p.ref)
}

// String is the pair's ratio with its two figures, or "n/a".
func (p cpuPair) String() string {
	if !p.have() {
		return "n/a"
	}
	s, r := p.times()
	return fmt.Sprintf("%s (%.0f against %.0f µs)", ratio(s, r), s, r)
}

// cheaper tells whether the subject cost at most what the reference did.
func (p cpuPair) cheaper() bool {
	if !p.have() {
		return false
	}
	s, r := p.times()
	return s <= r
}

// cpuPairs returns, for the reference's warm pass of one small set, the
// signed pair and the unsigned pair.
func (r *report) cpuPairs(refWarm smallResult) (signed, unsigned cpuPair) {
	signed = cpuPair{r.findSmall(refWarm, r.pass(roleSubject, "warm")), r.findSmall(refWarm, r.pass(roleReferenceSigned, ""))}
	unsigned = cpuPair{r.findSmall(refWarm, r.pass(roleSubjectUnsigned, "")), refWarm}
	return signed, unsigned
}

// cpuAgainstReference renders the subject's CPU per warm GET against the
// reference's for every small set, signed and unsigned.
func (r *report) cpuAgainstReference(b *strings.Builder) {
	subj, ref, ok := r.compared()
	if !ok {
		return
	}
	S, R := subj.label(), ref.label()
	fmt.Fprintf(b, "## CPU per warm GET, %s against %s\n\n"+
		"The target's own processes (as in the CPU table below), each pair read with the same requests: %[1]s's signed pass "+
		"against %[2]s read with those signed GETs once warm (it does not check them), %[1]s unsigned against %[2]s's warm pass.\n\n"+
		"| objects | conc | %[1]s signed / %[2]s signed | %[1]s unsigned / %[2]s |\n|---|---:|---:|---:|\n", S, R)
	for _, s := range r.small {
		if s.target != r.pass(roleReference, "warm") {
			continue
		}
		signed, unsigned := r.cpuPairs(s)
		fmt.Fprintf(b, "| %s | %d | %s | %s |\n", s.set, s.conc, signed, unsigned)
	}
	b.WriteString("\n")
}

// cpuTargets adds the CPU goal for every small set: the subject's
// signed warm GET costs its processes at most what the reference's cost
// for the same signed GETs, judged on the median of the interleaved
// rounds where they ran (else on the single pair).
func (r *report) cpuTargets(goal func(name, measured, target string, ok, have bool), R string) {
	for _, s := range r.small {
		if s.target != r.pass(roleReference, "warm") {
			continue
		}
		name, target := fmt.Sprintf("CPU per warm %s GET, %d clients, signed", s.set, s.conc), fmt.Sprintf("≤ 1.00x %s read signed", R)
		if rs, ok := r.findRounds(s); ok {
			if sum, ok := summarize(rs.signed); ok {
				goal(name, fmt.Sprintf("%s, median of %d rounds", sum, sum.n), target, sum.median <= 1, true)
				continue
			}
		}
		signed, _ := r.cpuPairs(s)
		goal(name, signed.String(), target, signed.cheaper(), signed.have())
	}
}
