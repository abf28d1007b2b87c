// Package peer is the protocol cluster members speak to each other, on
// each node's S3 listener under Prefix: its routes, the encoding of every
// request and answer, its error codes, its signing, the client that makes
// the calls and the handler that answers them. Nothing else knows a
// route, a query parameter or a header of it.
//
//	GET    chunk?bucket&key&etag&index&len&chunk[&off][&cached]  a chunk this node owns, from off
//	PUT    chunk?bucket&key&etag&index&len&chunk                 place a chunk on this owner
//	POST   forget?bucket&key  (X-Granary-Object)                 drop an object's cached state
//	POST   forget?all=1                                          drop every object's metadata and listing
//	GET    ping                                                  {"id": this node}
//	PUT    replica?bucket&key  (X-Granary-Object)                keep a write-back copy
//	DELETE replica?bucket&key&etag                               drop it (at the origin now)
//	GET    pending?bucket&key                                    {"pending": a write of it waits for the origin}
//	GET    status?bucket&prefix&key                              this node's status
//	GET    head?bucket&key[&cached[&stale]]                      an object's info (JSON)
//	GET    first?bucket&key&chunk                                its info (X-Granary-Object) and first chunk (body)
//	GET    coverage                                              the prefixes its catalog lists (JSON)
//	GET    list?bucket&prefix&delimiter&after&max                a page from its catalog (JSON)
//	DELETE warm?id                                               cancel its warm-up job id (the job's status, JSON)
//
// A refusal is a non-2xx status with a JSON body {"code", "message"}
// (see Code); the client turns it into an *Error.
//
// Every request is signed (sign.go); every answer to a request the
// member admitted is sealed for that request (HeaderAnswer), and a
// chunk's bytes (chunk, first) travel in frames, each with its tag
// (answer.go). The client acts on no answer it has not checked so.
package peer

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"

	"github.com/granary-dev/granary/store"
)

// Prefix starts the path of every peer request. It is under the admin
// prefix, which no bucket name can start with.
const Prefix = "/_granary/peer/"

// Routes, under Prefix.
const (
	RouteChunk   = Prefix + "chunk"
	RouteForget  = Prefix + "forget"
	RoutePing    = Prefix + "ping"
	RouteReplica = Prefix + "replica"
	RouteStatus  = Prefix + "status"
	RouteHead    = Prefix + "head"
	RouteFirst   = Prefix + "first"
	RoutePending = Prefix + "pending"
)

// HeaderObject carries an object's info (base64 of its JSON): a
// write-back copy's, the version a forget announces, or the version
// whose first chunk a first call answers with.
const HeaderObject = "X-Granary-Object"

// ChunkRequest names a chunk and the part of it asked for.
type ChunkRequest struct {
	ID store.ChunkID
	// Len is the chunk's length; Chunk the size objects are cut into
	// (both ends must agree on it); Off where the answer starts.
	Len, Chunk, Off int64
	// CachedOnly asks for what the member holds, never a fill (a new
	// owner asking a former one).
	CachedOnly bool
}

// chunkQuery is a ChunkRequest's query as the client sends it (Off and
// CachedOnly only when set), written as url.Values.Encode would write it
// (keys in order, values escaped) without building the map and its
// slices.
type chunkQuery ChunkRequest

func (q chunkQuery) Encode() string {
	r := ChunkRequest(q)
	b := make([]byte, 0, 80+len(r.ID.Bucket)+len(r.ID.Key)+len(r.ID.ETag))
	b = append(append(b, "bucket="...), url.QueryEscape(r.ID.Bucket)...)
	if r.CachedOnly {
		b = append(b, "&cached=1"...)
	}
	b = strconv.AppendInt(append(b, "&chunk="...), r.Chunk, 10)
	b = append(append(b, "&etag="...), url.QueryEscape(r.ID.ETag)...)
	b = strconv.AppendInt(append(b, "&index="...), r.ID.Index, 10)
	b = append(append(b, "&key="...), url.QueryEscape(r.ID.Key)...)
	b = strconv.AppendInt(append(b, "&len="...), r.Len, 10)
	if r.Off != 0 {
		b = strconv.AppendInt(append(b, "&off="...), r.Off, 10)
	}
	return string(b)
}

// parseChunkRequest decodes what chunkQuery encodes; get returns a query
// parameter ("" if absent). It checks syntax only: the numbers parse.
func parseChunkRequest(get func(string) string) (ChunkRequest, error) {
	r := ChunkRequest{ID: store.ChunkID{Bucket: get("bucket"), Key: get("key"), ETag: get("etag")}, CachedOnly: get("cached") == "1"}
	for _, f := range []struct {
		name     string
		p        *int64
		optional bool
	}{{"index", &r.ID.Index, false}, {"len", &r.Len, false}, {"chunk", &r.Chunk, false}, {"off", &r.Off, true}} {
		v := get(f.name)
		if v == "" && f.optional {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return r, fmt.Errorf("%w: chunk %s %q", ErrBadRequest, f.name, v)
		}
		*f.p = n
	}
	return r, nil
}

// Check reports whether r is one a node cutting objects into chunk-byte
// chunks can answer: ErrChunkSize if the sender cuts them otherwise, else
// ErrBadRequest for a length, offset, index or ETag no chunk has.
func (r ChunkRequest) Check(chunk int64) error {
	if r.Chunk != chunk {
		return fmt.Errorf("%w: %d bytes here, %d there", ErrChunkSize, chunk, r.Chunk)
	}
	if r.Len <= 0 || r.Len > chunk || r.Off < 0 || r.Off > r.Len || r.ID.Index < 0 || r.ID.ETag == "" {
		return fmt.Errorf("%w: no chunk is %d bytes from %d (index %d, etag %q)", ErrBadRequest, r.Len, r.Off, r.ID.Index, r.ID.ETag)
	}
	return nil
}

// firstLen is the length of the first chunk of an object info names,
// cut into chunk-byte chunks, as a first call's body carries it: none
// for an empty object, or one without an ETag (no chunk can be named).
func firstLen(info store.ObjectInfo, chunk int64) int64 {
	if info.ETag == "" {
		return 0
	}
	return min(info.Size, chunk)
}

// encodeObject is info as HeaderObject carries it.
func encodeObject(info store.ObjectInfo) (string, error) {
	js, err := json.Marshal(info)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(js), nil
}

// decodeObject reads an object's info from its HeaderObject value: it
// must name bucket/key.
func decodeObject(v, bucket, key string) (store.ObjectInfo, error) {
	var info store.ObjectInfo
	js, err := base64.StdEncoding.DecodeString(v)
	if err == nil {
		err = json.Unmarshal(js, &info)
	}
	if err != nil || info.Bucket != bucket || info.Key != key || info.Size < 0 {
		return store.ObjectInfo{}, fmt.Errorf("%w: bad %s header", ErrBadRequest, HeaderObject)
	}
	return info, nil
}
