// The tls scenario's markdown report: per read and client, the median of
// each node's rounds, HTTPS / HTTP against its target; nginx over both
// protocols and the Go ceiling (a trivial server) beside Granary; and
// every round.
package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Targets of HTTPS / HTTP.
const (
	tlsSmallTarget = 0.8 // warm small GETs
	tlsLargeTarget = 0.9 // the large stream
)

// tlsRow is one measured pass: GETs per second (small) or MB/s (large).
type tlsRow struct {
	read, client, proto string
	round               int
	large               bool
	rate                float64
	p50, p99            time.Duration // small reads only
	bytes               int64         // read and checked
}

// tlsReport collects a tls run's results.
type tlsReport struct {
	plan               tlsPlan
	quick              bool
	started            time.Time
	negotiated         string
	rows               []tlsRow
	seal, open         float64 // AES-128-GCM on one core, MB/s
	loadStart, loadEnd string  // as in report
}

// tlsKey names a row of the summary: a read by a client.
type tlsKey struct{ read, client string }

// keys are the summary's rows, in the order they were measured.
func (r *tlsReport) keys() []tlsKey {
	var out []tlsKey
	for _, row := range r.rows {
		if k := (tlsKey{row.read, row.client}); !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// median is the median row of k's rounds over proto (the lower middle of
// an even count), by rate; ok is false when none was measured.
func (r *tlsReport) median(k tlsKey, proto string) (row tlsRow, ok bool) {
	var rows []tlsRow
	for _, row := range r.rows {
		if row.read == k.read && row.client == k.client && row.proto == proto {
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		return tlsRow{}, false
	}
	slices.SortFunc(rows, func(a, b tlsRow) int { return cmp.Compare(a.rate, b.rate) })
	return rows[(len(rows)-1)/2], true
}

func (r *tlsReport) markdown() string {
	var b strings.Builder
	r.header(&b)
	r.summary(&b)
	r.referenceSummary(&b, "nginx proxy_cache", "nginx", protoNginxHTTP, protoNginxHTTPS)
	r.referenceSummary(&b, "the Go ceiling (a trivial net/http server, bytes from memory)", "Go", protoGoHTTP, protoGoHTTPS)
	r.rounds(&b)
	return b.String()
}

func (r *tlsReport) header(b *strings.Builder) {
	p := r.plan
	fmt.Fprintf(b, "# Granary over HTTPS against HTTP\n\n")
	b.WriteString(runStamp(r.started, r.quick))
	fmt.Fprintf(b, ". Two `granary serve` nodes on loopback in front of the same MinIO, --ram %s each and no disk tier, "+
		"--freshness immutable, the bucket anonymous-read: one serves HTTP, one HTTPS (--tls-cert with an ECDSA P-256 "+
		"certificate made for the run; negotiated: %s). Both read every object once before the measurements (their caches "+
		"warm, their fills settled). The same client reads both: Go net/http, HTTP/1.1, keep-alive, %d connections for %d "+
		"concurrent small GETs, SigV4 headers (signed) or none (unsigned); every byte is checked against the object's. "+
		"nginx proxy_cache in front of the same MinIO, warm (every measured read a cache hit), serves HTTP and, with the same "+
		"certificate, HTTPS (OpenSSL, TLS 1.2 and 1.3); it is read unsigned. "+
		"Each row runs %d round(s) on each target, alternating the order; the tables give the median round. "+
		"Load average (1 min) %s before, %s after.\n\n"+
		"Every HTTPS byte is sealed by the server and opened by the client, both on this machine's cores: AES-128-GCM "+
		"(Go, one core, 16 KiB records) seals %.0f MB/s and opens %.0f MB/s here.\n\n",
		mib(p.ram), r.negotiated, p.conc, p.conc, p.rounds, r.loadStart, r.loadEnd, r.seal, r.open)
}

func (r *tlsReport) summary(b *strings.Builder) {
	b.WriteString("| read | client | HTTP | HTTPS | HTTPS / HTTP | target | p50 HTTP / HTTPS |\n|---|---|---:|---:|---:|---|---:|\n")
	for _, k := range r.keys() {
		h, okH := r.median(k, protoHTTP)
		s, okS := r.median(k, protoHTTPS)
		if !okH || !okS {
			continue
		}
		unit, target, p50 := "GET/s", tlsSmallTarget, fmt.Sprintf("%s / %s", ms(h.p50), ms(s.p50))
		if h.large {
			unit, target, p50 = "MB/s", tlsLargeTarget, ""
		}
		met := "met"
		if s.rate < target*h.rate {
			met = "**missed**"
		}
		fmt.Fprintf(b, "| %s | %s | %.0f %s | %.0f %s | %s | >= %.1fx: %s | %s |\n",
			k.read, k.client, h.rate, unit, s.rate, unit, ratio(s.rate, h.rate), target, met, p50)
	}
	b.WriteString("\n")
}

// referenceSummary sets Granary beside a reference (nginx, or the Go
// ceiling) read over both protocols: what TLS costs each, and Granary's
// rate over the reference's, protocol by protocol. The large stream is
// read signed from Granary, unsigned from the reference (one signature
// per stream).
func (r *tlsReport) referenceSummary(b *strings.Builder, title, name, plain, secure string) {
	fmt.Fprintf(b, "Against %s:\n\n| read | %[2]s HTTP | %[2]s HTTPS | %[2]s HTTPS / HTTP | "+
		"Granary HTTP / %[2]s HTTP | Granary HTTPS / %[2]s HTTPS |\n|---|---:|---:|---:|---:|---:|\n", title, name)
	for _, k := range r.keys() {
		nh, okH := r.median(k, plain)
		ns, okS := r.median(k, secure)
		if !okH || !okS {
			continue
		}
		gk := k
		if nh.large {
			gk.client = clientSigned
		}
		gh, okGH := r.median(gk, protoHTTP)
		gs, okGS := r.median(gk, protoHTTPS)
		if !okGH || !okGS {
			continue
		}
		unit := "GET/s"
		if nh.large {
			unit = "MB/s"
		}
		fmt.Fprintf(b, "| %s | %.0f %s | %.0f %s | %s | %s | %s |\n", k.read, nh.rate, unit, ns.rate, unit,
			ratio(ns.rate, nh.rate), ratio(gh.rate, nh.rate), ratio(gs.rate, ns.rate))
	}
	b.WriteString("\n")
}

func (r *tlsReport) rounds(b *strings.Builder) {
	b.WriteString("Every round:\n\n| read | client | node | round | rate | p50 | p99 |\n|---|---|---|---:|---:|---:|---:|\n")
	for _, row := range r.rows {
		rate, p50, p99 := fmt.Sprintf("%.0f GET/s", row.rate), ms(row.p50), ms(row.p99)
		if row.large {
			rate, p50, p99 = fmt.Sprintf("%.0f MB/s", row.rate), "", ""
		}
		fmt.Fprintf(b, "| %s | %s | %s | %d | %s | %s | %s |\n", row.read, row.client, row.proto, row.round+1, rate, p50, p99)
	}
	b.WriteString("\n")
}
