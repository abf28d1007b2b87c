// The reads scenario's lineup: what the report may say of each target it
// is given (its role in the comparisons, its passes, its titles), kept
// apart from where the target runs. The report compares targets by role,
// never by name, and lists the targets it was given.
package main

import (
	"net"
	"net/url"
	"strings"
)

// role is what a target is in the reads report's comparisons.
type role int

const (
	roleNone            role = iota // measured and listed, compared with nothing
	roleDirect                      // the origin read directly: the cache under test's baseline
	roleCeiling                     // the fastest server possible on this machine
	roleReference                   // the reference cache the one under test is judged against
	roleSubject                     // the cache under test
	roleSubjectUnsigned             // the cache under test read unsigned, as the reference is
	// roleReferenceSigned is the reference read, once warm, with the signed
	// GETs the cache under test gets: the same requests, which it does not
	// check.
	roleReferenceSigned
)

// targetKind is what the report knows of a target apart from where it
// is. The zero kind is a target compared with nothing, read once.
type targetKind struct {
	role  role
	cache bool   // read twice: a cold pass, then a warm one
	title string // as column headers name it ("" is the target's name)
	// heading names it in a section heading; "" is the title.
	heading string
	// about is the paragraph under the comparison against a reference
	// target: what it is and how it is read.
	about string
	// readNote says how the client reads it, for the report's first
	// paragraph ("" for signed GETs).
	readNote string
	// cpuNote is the CPU table's word for its processes' time when it
	// has none of its own to measure; "" says "not measured".
	cpuNote string
	// remote is a server elsewhere: neither its processes nor an origin
	// behind it are this machine's to measure.
	remote bool
}

// The kinds of the local lineup: MinIO direct, the trivial server, nginx
// proxy_cache in front of MinIO (read unsigned, then signed once warm),
// and granary in front of MinIO, read signed when cold, unsigned, then
// signed again.
var (
	kindMinio   = targetKind{role: roleDirect, title: "MinIO"}
	kindTrivial = targetKind{role: roleCeiling, cpuNote: "in the client"}
	kindNginx   = targetKind{role: roleReference, cache: true, heading: "nginx proxy_cache", readNote: "unsigned GETs for nginx",
		about: "nginx (Debian's, proxy_cache on tmpfs in front of the same MinIO, upstream keepalive, proxy_cache_lock) " +
			"is read with unsigned GETs of a public-read bucket, so it does less work per request than granary, which checks " +
			"every SigV4 signature; once warm it is also read with granary's signed GETs (nginx signed), which it does not check. " +
			"First pass: both caches empty."}
	kindNginxSigned = targetKind{role: roleReferenceSigned,
		readNote: "nginx read once more with the signed GETs granary gets (\"nginx signed\", after its warm pass; it does not check them)"}
	kindGranary         = targetKind{role: roleSubject, cache: true, heading: "Granary"}
	kindGranaryUnsigned = targetKind{role: roleSubjectUnsigned}
)

// label is t's name in column headers.
func (t target) label() string {
	if t.title != "" {
		return t.title
	}
	return t.name
}

// headingName is t's name in a section heading.
func (t target) headingName() string {
	if t.heading != "" {
		return t.heading
	}
	return t.label()
}

// passes returns the labelled passes the reads scenario makes over t:
// a cache gets a cold pass and then a warm one.
func passes(t target) []string {
	if t.cache {
		return []string{coldPass(t), t.name + " warm"}
	}
	return []string{t.name}
}

// step is one pass of a schedule: the target (an index into the lineup)
// and the pass's label.
type step struct {
	target int
	label  string
}

// schedule orders the passes over targets: each target's in turn, except
// that the cache under test read unsigned is read between that cache's
// cold and warm passes. Each cache is then read in the same order: its
// cold pass, the unsigned pass (nginx's warm one, granary unsigned), and
// the signed one (nginx signed, granary's warm one). The first pass after
// a cold one costs more than later ones (the kernel moves the pages just
// written to its active list as they are first read), so only the same
// place in that order compares the two caches fairly.
func schedule(targets []target) []step {
	subject, unsigned := roleIndex(targets, roleSubject), roleIndex(targets, roleSubjectUnsigned)
	moved := subject >= 0 && targets[subject].cache && unsigned > subject
	var s []step
	for i, t := range targets {
		if moved && i == unsigned {
			continue // read in its subject's turn
		}
		for k, label := range passes(t) {
			s = append(s, step{i, label})
			if moved && i == subject && k == 0 {
				s = append(s, step{unsigned, passes(targets[unsigned])[0]})
			}
		}
	}
	return s
}

// roleIndex is the index of the target in role ro, or -1.
func roleIndex(targets []target, ro role) int {
	for i, t := range targets {
		if t.role == ro {
			return i
		}
	}
	return -1
}

// coldPass is the label of a cache's first pass ("" for no cache).
func coldPass(t target) string {
	if !t.cache {
		return ""
	}
	return t.name + " cold"
}

// byRole returns the report's target in role ro, if it was given one.
func (r *report) byRole(ro role) (target, bool) {
	if i := roleIndex(r.targets, ro); i >= 0 {
		return r.targets[i], true
	}
	return target{}, false
}

// pass returns the label of the pass of the target in role ro (suffix
// "cold", "warm", or "" for a target read once), or "" without one.
func (r *report) pass(ro role, suffix string) string {
	t, ok := r.byRole(ro)
	if !ok {
		return ""
	}
	if suffix == "" {
		return t.name
	}
	return t.name + " " + suffix
}

// lineupNote renders the passes over the targets given, in the order
// measured.
func (r *report) lineupNote() string {
	var names []string
	for _, st := range schedule(r.targets) {
		names = append(names, st.label)
	}
	return "Passes, in the order measured: " + strings.Join(names, ", ") + "."
}

// where says where the targets run, for the report's first paragraph.
func (r *report) where() string {
	for _, t := range r.targets {
		if !loopback(t.endpoint) {
			return "Targets not all on loopback"
		}
	}
	return "Every target on loopback"
}

// loopback tells whether endpoint's host is this machine ("" counts: a
// target known only by its kind).
func loopback(endpoint string) bool {
	if endpoint == "" {
		return true
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	if u.Hostname() == "localhost" {
		return true
	}
	ip := net.ParseIP(u.Hostname())
	return ip != nil && ip.IsLoopback()
}

// readNotes joins the targets' notes on how they are read, each after a
// "; ", for the report's first paragraph.
func (r *report) readNotes() string {
	var b strings.Builder
	for _, t := range r.targets {
		if t.readNote != "" {
			b.WriteString("; " + t.readNote)
		}
	}
	return b.String()
}
