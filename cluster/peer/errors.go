// The peer protocol's error contract: each refusal has a code and an HTTP
// status, travels as JSON, and comes out of the client as an *Error that
// matches the store's (or this package's) sentinel errors with errors.Is.
package peer

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/granary-dev/granary/store"
)

// Code names why a member refused a call.
type Code string

// The codes, with their statuses in codeStatus.
const (
	CodeUnauthenticated Code = "Unauthenticated"     // no valid signature with the cluster secret
	CodeCertRequired    Code = "CertificateRequired" // mutual TLS: the connection presented no verified client certificate
	CodeBadRequest      Code = "BadRequest"          // a malformed call, or one no chunk or object fits
	CodeChunkSize       Code = "ChunkSizeMismatch"   // the members cut objects into chunks of different sizes
	CodeNotCached       Code = "NotCached"           // a cached-only call for what the member does not hold
	CodeNoSuchKey       Code = "NoSuchKey"
	CodeNoSuchBucket    Code = "NoSuchBucket"
	CodeNoSuchWarm      Code = "NoSuchWarmUp"   // no warm-up job of that id on the member
	CodeIncompleteBody  Code = "IncompleteBody" // the body ended before its length
	CodeNotSupported    Code = "NotSupported"   // the member does not do that (no cluster, no write-back copies)
	CodeUnavailable     Code = "Unavailable"    // the member cannot reach what it needs (its origin)
	CodeInternal        Code = "InternalError"
)

var codeStatus = map[Code]int{
	CodeUnauthenticated: http.StatusForbidden,
	CodeCertRequired:    http.StatusForbidden,
	CodeBadRequest:      http.StatusBadRequest,
	CodeChunkSize:       http.StatusConflict,
	CodeNotCached:       http.StatusNotFound,
	CodeNoSuchKey:       http.StatusNotFound,
	CodeNoSuchBucket:    http.StatusNotFound,
	CodeNoSuchWarm:      http.StatusNotFound,
	CodeIncompleteBody:  http.StatusBadRequest,
	CodeNotSupported:    http.StatusNotImplemented,
	CodeUnavailable:     http.StatusServiceUnavailable,
	CodeInternal:        http.StatusInternalServerError,
}

// Sentinel errors of the protocol; the handler maps them (and the store's)
// to codes, and an *Error matches the same sentinel on the client.
var (
	ErrUnauthenticated = errors.New("peer: request not signed with the cluster secret")
	ErrCertRequired    = errors.New("peer: the connection presented no client certificate signed by the members' CA")
	ErrBadRequest      = errors.New("peer: bad request")
	ErrChunkSize       = errors.New("peer: members cut objects into chunks of different sizes")
	ErrIncompleteBody  = errors.New("peer: body ended early")
	ErrNotSupported    = errors.New("peer: not supported by this member")
	// ErrBadAnswer is the asker's, never a code: an answer not sealed,
	// or whose seal or frames do not match it (not the member's answer
	// to this call, or changed on the way; see answer.go). It matches no
	// store sentinel: the asker treats it as that member failing, and
	// asks the next source.
	ErrBadAnswer = errors.New("peer: answer not sealed with the cluster secret for this call")
)

// codeErrors maps each code to the sentinel it matches, in the order the
// handler tries them.
var codeErrors = []struct {
	code Code
	err  error
}{
	{CodeUnauthenticated, ErrUnauthenticated},
	{CodeCertRequired, ErrCertRequired},
	{CodeBadRequest, ErrBadRequest},
	{CodeBadRequest, store.ErrInvalidBucketName},
	{CodeBadRequest, store.ErrInvalidKey},
	{CodeChunkSize, ErrChunkSize},
	{CodeIncompleteBody, ErrIncompleteBody},
	{CodeIncompleteBody, store.ErrIncompleteBody},
	{CodeNotSupported, ErrNotSupported},
	{CodeNotCached, store.ErrNotFound},
	{CodeNoSuchKey, store.ErrNoSuchKey},
	{CodeNoSuchBucket, store.ErrNoSuchBucket},
	{CodeNoSuchWarm, ErrNoSuchWarm},
	{CodeUnavailable, store.ErrUnavailable},
}

// codeOf is the code a handler answers err with.
func codeOf(err error) Code {
	for _, c := range codeErrors {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return CodeInternal
}

// Error is a member's refusal of a call.
type Error struct {
	Peer    string // the member's ID
	Status  int    // its HTTP status
	Code    Code   // "" if the answer carried none (not a peer-protocol answer)
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("peer %s: %d %s: %s", e.Peer, e.Status, e.Code, e.Message)
}

// Is matches the sentinel of e's code.
func (e *Error) Is(target error) bool {
	for _, c := range codeErrors {
		if c.code == e.Code && c.err == target {
			return true
		}
	}
	return false
}

// errorBody is a refusal's JSON.
type errorBody struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

// decodeError reads a refusal from member peer: status and up to a few
// KiB of body.
func decodeError(peer string, status int, body []byte) *Error {
	e := &Error{Peer: peer, Status: status}
	var b errorBody
	if json.Unmarshal(body, &b) == nil && codeStatus[b.Code] == status {
		e.Code, e.Message = b.Code, b.Message
	} else {
		e.Message = string(body)
	}
	return e
}
