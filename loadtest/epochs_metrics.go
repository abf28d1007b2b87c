// The epochs scenario's view of a node's /metrics: the Prometheus text
// parsed into series, and the chunk cache counters whose difference over
// an epoch gives its hit rate.
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// metricSet maps each sample's series, as the text writes it (name and
// labels, e.g. `granary_cache_hits_total{tier="ram"}`), to its value.
type metricSet map[string]float64

// parseMetrics reads the Prometheus text format: comments and blank lines
// are skipped; every other line is a series, a space, a value and maybe a
// timestamp. Label values here hold no spaces, so the series ends at the
// first space after its closing brace (or its name).
func parseMetrics(r io.Reader) (metricSet, error) {
	m := metricSet{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		end := strings.LastIndexByte(line, '}') + 1 // 0 without labels
		series, rest, ok := strings.Cut(line[end:], " ")
		if !ok {
			return nil, fmt.Errorf("metrics: no value in %q", line)
		}
		series = line[:end] + series
		value, _, _ := strings.Cut(strings.TrimSpace(rest), " ")
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return nil, fmt.Errorf("metrics: %q: %w", line, err)
		}
		m[series] = v
	}
	return m, sc.Err()
}

// sum adds the values of every series of the metric name (any labels).
func (m metricSet) sum(name string) float64 {
	var total float64
	for series, v := range m {
		if series == name || strings.HasPrefix(series, name+"{") {
			total += v
		}
	}
	return total
}

// sumLabel adds the values of the series of the metric name whose labels
// include label (e.g. `op="get"`).
func (m metricSet) sumLabel(name, label string) float64 {
	var total float64
	for series, v := range m {
		if strings.HasPrefix(series, name+"{") && strings.Contains(series, label) {
			total += v
		}
	}
	return total
}

// originGets is the object reads the node sent to its origin so far.
func (m metricSet) originGets() float64 {
	return m.sumLabel("granary_origin_requests_total", `op="get"`)
}

// originStats is the metadata requests (HEAD) the node sent to its
// origin so far: a cold read of a small object should send none, its
// metadata coming with its bytes.
func (m metricSet) originStats() float64 {
	return m.sumLabel("granary_origin_requests_total", `op="stat"`)
}

// cacheCounts are a node's chunk lookups so far, or over an interval.
// Every lookup is a hit in one tier or a miss (granary_cache_misses_total
// counts a miss joined to a fetch in flight too).
type cacheCounts struct {
	hits   float64 // over every tier
	misses float64
}

// cache returns m's chunk cache counters.
func (m metricSet) cache() cacheCounts {
	return cacheCounts{hits: m.sum("granary_cache_hits_total"), misses: m.sum("granary_cache_misses_total")}
}

// minus returns the counts between an earlier reading and c.
func (c cacheCounts) minus(earlier cacheCounts) cacheCounts {
	return cacheCounts{hits: c.hits - earlier.hits, misses: c.misses - earlier.misses}
}

func (c cacheCounts) lookups() float64 { return c.hits + c.misses }

// hitRate is hits over lookups; 0 without lookups.
func (c cacheCounts) hitRate() float64 {
	if c.lookups() <= 0 {
		return 0
	}
	return c.hits / c.lookups()
}

// capacityBound is the best hit rate a cache of the disk tier's capacity
// can keep on a data set of dataBytes read uniformly: capacity/dataset,
// at most 1. The capacity is the node's own figure
// (granary_tier_capacity_bytes{tier="disk"}), or disk when it has none.
func capacityBound(m metricSet, disk, dataBytes int64) float64 {
	capacity := float64(disk)
	if v, ok := m[`granary_tier_capacity_bytes{tier="disk"}`]; ok && v > 0 {
		capacity = v
	}
	return min(1, capacity/float64(dataBytes))
}

// scrapeMetrics GETs endpoint's /metrics and parses it. The chunk miss
// counter has no labels, so the node exports it from the start: a
// reading without it is not a granary node's.
func scrapeMetrics(ctx context.Context, endpoint string) (metricSet, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/metrics: status %d", endpoint, resp.StatusCode)
	}
	m, err := parseMetrics(resp.Body)
	if err != nil {
		return nil, err
	}
	if _, ok := m[`granary_tier_capacity_bytes{tier="ram"}`]; !ok {
		return nil, fmt.Errorf("GET %s/metrics: no granary_tier_capacity_bytes of the RAM tier", endpoint)
	}
	return m, nil
}

// statusCounter is an http.RoundTripper that counts the requests it
// carries and the answers that were not 2xx (minio-go retries some of
// them, such as 503 SlowDown, out of sight of its caller), and the
// answers with a cache status header (nginx's).
type statusCounter struct {
	next     http.RoundTripper
	requests atomic.Int64
	failed   atomic.Int64 // not 2xx, or no answer at all
	hits     atomic.Int64 // X-Cache-Status: HIT
	others   atomic.Int64 // X-Cache-Status of any other value (MISS, ...)
}

func (c *statusCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	c.requests.Add(1)
	resp, err := c.next.RoundTrip(req)
	if err != nil || resp.StatusCode/100 != 2 {
		c.failed.Add(1)
	}
	if err == nil {
		countCacheStatus(resp.Header, &c.hits, &c.others)
	}
	return resp, err
}

// snapshot returns the counts so far.
func (c *statusCounter) snapshot() (requests, failed int64) {
	return c.requests.Load(), c.failed.Load()
}

// cacheSnapshot returns the cache status counts so far.
func (c *statusCounter) cacheSnapshot() (hits, others int64) {
	return c.hits.Load(), c.others.Load()
}

// newCountingS3Client is newS3Client with every request counted; the
// caller closes tr's idle connections when done. Empty credentials make
// it anonymous (unsigned requests).
func newCountingS3Client(hostport, access, secret string) (*minio.Client, *http.Transport, *statusCounter, error) {
	tr, err := minio.DefaultTransport(false)
	if err != nil {
		return nil, nil, nil, err
	}
	sc := &statusCounter{next: tr}
	cl, err := minio.New(hostport, &minio.Options{Creds: credentials.NewStaticV4(access, secret, ""), Region: "us-east-1", Transport: sc})
	return cl, tr, sc, err
}
