// Request metrics: a counter by operation and status, and a latency
// histogram by operation, with the per-operation children resolved once.
package api

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/granary-dev/granary/internal/membody"
)

// op names an S3 operation (or an admin route) for metrics and logs.
type op uint8

const (
	opUnknown op = iota // failed before routing (bad request line, ...)
	opHealthz
	opReadyz
	opMetrics
	opFlush
	opWarmStart
	opWarmStatus
	opWarmCancel
	opStatus
	opPin
	opUnpin
	opPins
	opHistory
	opObjects
	opEvict
	opWriteBack
	opRing
	opConsole
	opPeer
	opListBuckets
	opCreateBucket
	opHeadBucket
	opDeleteBucket
	opGetBucketLocation
	opGetBucketVersioning
	opPutBucketVersioning
	opListObjectVersions
	opGetBucketTagging
	opPutBucketTagging
	opDeleteBucketTagging
	opGetObjectTagging
	opPutObjectTagging
	opDeleteObjectTagging
	opListObjects
	opListObjectsV2
	opHeadObject
	opGetObject
	opPutObject
	opCopyObject
	opDeleteObject
	opDeleteObjects
	opCreateMultipartUpload
	opUploadPart
	opUploadPartCopy
	opCompleteMultipartUpload
	opAbortMultipartUpload
	opListParts
	opListMultipartUploads
	opGetBucketACL
	opPutBucketACL
	opGetObjectACL
	opPutObjectACL
	opPreflight      // a CORS preflight (OPTIONS), answered unauthenticated
	opNotImplemented // a sub-resource or method Granary does not serve
	numOps
)

var opNames = [numOps]string{
	opUnknown:                 "Unknown",
	opHealthz:                 "Healthz",
	opReadyz:                  "Readyz",
	opMetrics:                 "Metrics",
	opFlush:                   "Flush",
	opWarmStart:               "WarmStart",
	opWarmStatus:              "WarmStatus",
	opWarmCancel:              "WarmCancel",
	opStatus:                  "Status",
	opPin:                     "Pin",
	opUnpin:                   "Unpin",
	opPins:                    "Pins",
	opHistory:                 "History",
	opObjects:                 "Objects",
	opEvict:                   "Evict",
	opWriteBack:               "WriteBack",
	opRing:                    "Ring",
	opConsole:                 "Console",
	opPeer:                    "Peer",
	opListBuckets:             "ListBuckets",
	opCreateBucket:            "CreateBucket",
	opHeadBucket:              "HeadBucket",
	opDeleteBucket:            "DeleteBucket",
	opGetBucketLocation:       "GetBucketLocation",
	opGetBucketVersioning:     "GetBucketVersioning",
	opPutBucketVersioning:     "PutBucketVersioning",
	opListObjectVersions:      "ListObjectVersions",
	opGetBucketTagging:        "GetBucketTagging",
	opPutBucketTagging:        "PutBucketTagging",
	opDeleteBucketTagging:     "DeleteBucketTagging",
	opGetObjectTagging:        "GetObjectTagging",
	opPutObjectTagging:        "PutObjectTagging",
	opDeleteObjectTagging:     "DeleteObjectTagging",
	opListObjects:             "ListObjects",
	opListObjectsV2:           "ListObjectsV2",
	opHeadObject:              "HeadObject",
	opGetObject:               "GetObject",
	opPutObject:               "PutObject",
	opCopyObject:              "CopyObject",
	opDeleteObject:            "DeleteObject",
	opDeleteObjects:           "DeleteObjects",
	opCreateMultipartUpload:   "CreateMultipartUpload",
	opUploadPart:              "UploadPart",
	opUploadPartCopy:          "UploadPartCopy",
	opCompleteMultipartUpload: "CompleteMultipartUpload",
	opAbortMultipartUpload:    "AbortMultipartUpload",
	opListParts:               "ListParts",
	opListMultipartUploads:    "ListMultipartUploads",
	opGetBucketACL:            "GetBucketAcl",
	opPutBucketACL:            "PutBucketAcl",
	opGetObjectACL:            "GetObjectAcl",
	opPutObjectACL:            "PutObjectAcl",
	opPreflight:               "Preflight",
	opNotImplemented:          "NotImplemented",
}

func (o op) String() string {
	if o < numOps {
		return opNames[o]
	}
	return opNames[opUnknown]
}

// statusLabels holds the label text of every HTTP status, so counting a
// request does not format a number.
var statusLabels = func() (l [600]string) {
	for i := range l {
		l[i] = strconv.Itoa(i)
	}
	return l
}()

func statusLabel(code int) string {
	if code >= 0 && code < len(statusLabels) {
		return statusLabels[code]
	}
	return strconv.Itoa(code)
}

// metrics are the request collectors. The vectors are safe for concurrent
// use; duration is filled once in newMetrics and only read afterwards.
// served keeps each operation's counter of 200s and 206s once looked up
// (see counter).
type metrics struct {
	requests *prometheus.CounterVec
	duration [numOps]prometheus.Observer
	refused  prometheus.Counter // connections closed at accept (MaxConnsPerIP)
	laneGets prometheus.Counter // GETs and HEADs the GET lane answered (lane.go)
	served   [numOps][2]atomic.Pointer[prometheus.Counter]
}

// sentFromFiles counts the body bytes the kernel sent from the RAM
// tier's memory file (membody.FileBytes): one collector for the process,
// as the count is the process's.
var sentFromFiles = prometheus.NewCounterFunc(prometheus.CounterOpts{
	Name: "granary_body_bytes_sendfile_total",
	Help: "Response body bytes sent with sendfile from the RAM tier's memory file, by reference, rather than copied out of the node's memory.",
}, func() float64 { return float64(membody.FileBytes()) })

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "granary_requests_total",
		Help: "S3 and admin requests answered, by operation and HTTP status.",
	}, []string{"op", "code"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "granary_request_duration_seconds",
		Help:    "Time from a request's arrival to its last response byte, by operation.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"op"})
	refused := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "granary_connections_refused_total",
		Help: "Connections closed as soon as accepted because their client address already held the most open connections allowed.",
	})
	laneGets := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "granary_get_lane_requests_total",
		Help: "GetObject and HeadObject requests the node's GET lane answered itself rather than through fasthttp (counted in granary_requests_total too).",
	})
	if reg != nil {
		var err error
		if requests, err = registerOrReuse(reg, requests); err != nil {
			return nil, err
		}
		if duration, err = registerOrReuse(reg, duration); err != nil {
			return nil, err
		}
		if refused, err = registerOrReuse(reg, refused); err != nil {
			return nil, err
		}
		if laneGets, err = registerOrReuse(reg, laneGets); err != nil {
			return nil, err
		}
		if _, err = registerOrReuse(reg, sentFromFiles); err != nil {
			return nil, err
		}
	}
	m := &metrics{requests: requests, refused: refused, laneGets: laneGets}
	for o := op(0); o < numOps; o++ {
		m.duration[o] = duration.WithLabelValues(o.String())
	}
	return m, nil
}

// registerOrReuse registers c, or returns the equal collector registered
// before (a second Server on the same registry shares the series).
func registerOrReuse[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if prev, ok := are.ExistingCollector.(C); ok {
			return prev, nil
		}
	}
	return c, fmt.Errorf("api: metrics: %w", err)
}

// observe records one finished request.
func (m *metrics) observe(o op, status int, seconds float64) {
	if o >= numOps {
		o = opUnknown
	}
	m.counter(o, status).Inc()
	m.duration[o].Observe(seconds)
}

// counter is o's request counter for status. A 200's or a 206's is kept
// once looked up: a lookup by label values hashes both on every request,
// and nearly every request ends in one of the two. A race stores the
// same counter twice.
func (m *metrics) counter(o op, status int) prometheus.Counter {
	var i int
	switch status {
	case http.StatusOK:
	case http.StatusPartialContent:
		i = 1
	default:
		return m.requests.WithLabelValues(opNames[o], statusLabel(status))
	}
	if c := m.served[o][i].Load(); c != nil {
		return *c
	}
	c := m.requests.WithLabelValues(opNames[o], statusLabel(status))
	m.served[o][i].Store(&c)
	return c
}
