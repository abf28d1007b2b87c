// The handler: answers other members' calls, mounted by the S3 server on
// its listener under Prefix. It checks every signature, decodes every
// call, and answers a refusal with its code.
package peer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/granary-dev/granary/cluster"
	"github.com/granary-dev/granary/internal/membody"
	"github.com/granary-dev/granary/store"
)

// Backend answers the calls about cached data: the node's engine.
type Backend interface {
	// ChunkSize is the size this node cuts objects into: a chunk call
	// from a member that cuts them otherwise is refused before anything
	// is read or allocated.
	ChunkSize() int64
	// Chunk returns a reader of the chunk r names (r passed
	// ChunkRequest.Check), from r.Off on: from the tiers or a fill from
	// the origin (with r.CachedOnly, the tiers only, else
	// store.ErrNotFound). The reader fails if the chunk cannot be had;
	// ctx bounds it.
	Chunk(ctx context.Context, r ChunkRequest) (io.Reader, error)
	// StoreChunk keeps a chunk placed on this node as its owner (r
	// passed ChunkRequest.Check; data is its r.Len bytes).
	StoreChunk(r ChunkRequest, data []byte) error
	// Forget drops what is cached of bucket/key, which member from
	// changed; written, if set, is the new version, not at the origin
	// yet.
	Forget(bucket, key string, written *store.ObjectInfo, from string)
	// ForgetAll drops every object's metadata and listing, which member
	// from changed more of than it could list.
	ForgetAll(from string)
	// Pending reports whether a write of bucket/key through this node
	// still waits for the origin (the write-back log holds it).
	Pending(bucket, key string) bool
	// Head returns an object's info for a member (with cachedOnly, from
	// the metadata cache only, else store.ErrNotFound).
	Head(ctx context.Context, bucket, key string, cachedOnly bool) (store.ObjectInfo, error)
}

// Copies keeps the write-back copies other members send.
type Copies interface {
	Put(ctx context.Context, from string, info store.ObjectInfo, body io.Reader) error
	Drop(from, bucket, key, etag string) error
}

// HandlerOptions configure a Handler. Self, Secret and Backend are
// required.
type HandlerOptions struct {
	Self    cluster.Member
	Secret  []byte
	Backend Backend
	// Copies, if set, keeps write-back copies; nil refuses them.
	Copies Copies
	// Status answers a status call as the admin route does; nil refuses
	// it.
	Status func(c *fiber.Ctx) error
	// CancelWarm cancels this node's warm-up job id and returns the
	// job's status (JSON) after the cancel, or an error matching
	// ErrNoSuchWarm if there is no such job; nil refuses the call.
	CancelWarm func(id string) (any, error)
	// VerifiedCert, if set, is asked of every call before its
	// signature is: whether the call's connection presented a client
	// certificate the listener's TLS verified (mutual TLS between
	// members). A call it denies is refused with CodeCertRequired,
	// however well it is signed.
	VerifiedCert func(c *fiber.Ctx) bool
	// CheckName refuses a bucket name (key "") or object key no S3
	// request could carry.
	CheckName func(bucket, key string) error
	// Context is the base of the contexts calls run under.
	Context context.Context
	Logger  zerolog.Logger
}

// Handler answers the calls. Safe for concurrent use.
type Handler struct {
	o      HandlerOptions
	key    *secretMAC // o.Secret's
	replay *replayGuard
	// hashes are the frame hashes of chunks sent (see framehash.go).
	hashes *hashCache
}

// NewHandler returns a handler; nil CheckName accepts every name.
func NewHandler(o HandlerOptions) *Handler {
	if o.CheckName == nil {
		o.CheckName = func(string, string) error { return nil }
	}
	if o.Context == nil {
		o.Context = context.Background()
	}
	return &Handler{o: o, key: newSecretMAC(o.Secret), replay: newReplayGuard(time.Now()), hashes: newHashCache(maxHashBytes)}
}

var prefix, headerPrefix = []byte(Prefix), []byte(HeaderPrefix)

// IsCall reports whether c is a peer call (its path is under Prefix).
func IsCall(c *fiber.Ctx) bool {
	return bytes.HasPrefix(c.Request().URI().PathOriginal(), prefix)
}

// Target is the bucket and key a call is about, for the request log.
func Target(c *fiber.Ctx) (bucket, key string) {
	args := c.Request().URI().QueryArgs()
	return string(args.Peek("bucket")), string(args.Peek("key"))
}

// Serve answers the call c; body is its request body (nil if none), read
// under the server's I/O timeouts. A refusal is written as its code. The
// answer to a call admitted (its connection and signature checked) is
// sealed (see answer.go); one refused before that is not: it shares no
// key with the caller.
func (h *Handler) Serve(c *fiber.Ctx, body io.Reader) {
	req := c.Request()
	from, sig, err := h.admit(c)
	if err != nil {
		h.o.Logger.Warn().Err(err).Str("peer", string(req.Header.Peek(HeaderFrom))).Str("remote", c.IP()).
			Msg("peer request refused")
		refuse(c, err)
		return
	}
	k := &call{c: c, body: body, from: from, sig: sig, mac: h.key, answer: newAnswerKey(h.key, sig), mode: modeBody}
	k.bucket, k.key = k.get("bucket"), k.get("key")
	if err := h.serve(k); err != nil {
		k.mode = modeBody
		refuse(c, err)
	}
	k.seal()
}

// refuse writes err as the answer: its code's status and JSON.
func refuse(c *fiber.Ctx, err error) {
	code := codeOf(err)
	c.Status(codeStatus[code])
	c.JSON(errorBody{Code: code, Message: err.Error()})
}

// call is one decoded call.
type call struct {
	c           *fiber.Ctx
	body        io.Reader
	from, sig   string
	bucket, key string
	mac         *secretMAC // the cluster secret's
	// answer seals the answer; mode is how its body travels (the calls
	// that answer with a chunk set it).
	answer answerKey
	mode   string
}

// seal sets the answer's seal, once the answer is complete (a framed
// body is sealed frame by frame as it is written).
func (k *call) seal() {
	resp := k.c.Response()
	var body []byte
	if k.mode == modeBody {
		body = resp.Body()
	}
	resp.Header.Set(HeaderAnswer, k.answer.seal(resp.StatusCode(), k.mode, string(resp.Header.Peek(HeaderObject)), body))
}

// chunkMode is how the call's chunk travels: raw if the caller asked
// (over TLS), else in frames.
func (k *call) chunkMode() string {
	if string(k.c.Request().Header.Peek(HeaderRaw)) == "1" {
		return modeRaw
	}
	return modeFrames
}

// signedBody is the call's body, of size bytes, checked against its
// signature as it is read (see bodyCheck); nil if it has none.
func (k *call) signedBody(size int64) io.Reader {
	if k.body == nil {
		return nil
	}
	return newBodyCheck(k.body, size, k.mac, k.sig, func() string {
		return string(k.c.Request().Header.Peek(TrailerBody)) // set once the body ended
	})
}

func (k *call) get(name string) string { return string(k.c.Request().URI().QueryArgs().Peek(name)) }

func (h *Handler) serve(k *call) error {
	c, req := k.c, k.c.Request()
	method, path := string(req.Header.Method()), string(req.URI().PathOriginal())
	switch {
	case path == RouteChunk && method == fiber.MethodGet:
		return h.getChunk(k)
	case path == RouteChunk && method == fiber.MethodPut:
		return h.putChunk(k)
	case path == RouteForget && method == fiber.MethodPost:
		return h.forget(k)
	case path == RoutePing && method == fiber.MethodGet:
		return c.JSON(map[string]string{"id": h.o.Self.ID})
	case path == RouteReplica && (method == fiber.MethodPut || method == fiber.MethodDelete):
		return h.replica(k)
	case path == RouteStatus && method == fiber.MethodGet && h.o.Status != nil:
		return h.o.Status(c)
	case path == RouteWarm && method == fiber.MethodDelete:
		return h.cancelWarm(k)
	case path == RouteHead && method == fiber.MethodGet:
		return h.head(k)
	case path == RouteFirst && method == fiber.MethodGet:
		return h.first(k)
	case path == RouteCoverage && method == fiber.MethodGet:
		return h.coverage(k)
	case path == RouteList && method == fiber.MethodGet:
		return h.list(k)
	case path == RoutePending && method == fiber.MethodGet:
		if err := h.object(k); err != nil {
			return err
		}
		return c.JSON(pendingAnswer{Pending: h.o.Backend.Pending(k.bucket, k.key)})
	}
	return fmt.Errorf("%w: unknown call %s %s", ErrNotSupported, method, path)
}

// admit checks the call's connection (VerifiedCert), then its
// signature; it returns the sender and the signature.
func (h *Handler) admit(c *fiber.Ctx) (from, sig string, err error) {
	if h.o.VerifiedCert != nil && !h.o.VerifiedCert(c) {
		return "", "", ErrCertRequired
	}
	return h.authenticate(c.Request())
}

// authenticate checks a request's signature and nonce; it returns the
// sender and the signature.
func (h *Handler) authenticate(req *fasthttp.Request) (from, sig string, err error) {
	if len(req.Header.Peek(TrailerBody)) > 0 {
		return "", "", fmt.Errorf("%w: %s is a trailer", ErrUnauthenticated, TrailerBody)
	}
	s := signed{method: string(req.Header.Method()), path: string(req.URI().PathOriginal()), query: string(req.URI().QueryString())}
	req.Header.VisitAll(func(k, v []byte) {
		if len(k) >= len(HeaderPrefix) && bytes.EqualFold(k[:len(HeaderPrefix)], headerPrefix) {
			addHeader(&s, k, v) // only the few signed ones are copied
		}
	})
	sig = string(req.Header.Peek(HeaderSig))
	now := time.Now()
	if from, err = verify(h.key, h.o.Self.ID, s, sig, now); err != nil {
		return "", "", err
	}
	ms, _ := strconv.ParseInt(s.header(HeaderTime), 10, 64) // checked by verify
	if err := h.replay.accept(from, s.header(HeaderNonce), time.UnixMilli(ms)); err != nil {
		return "", "", err
	}
	return from, sig, nil
}

// object checks the call's bucket and key.
func (h *Handler) object(k *call) error {
	if h.o.CheckName(k.bucket, "") != nil || h.o.CheckName(k.bucket, k.key) != nil {
		return fmt.Errorf("%w: bad object name", ErrBadRequest)
	}
	return nil
}

// chunkRequest decodes and checks the call's chunk.
func (h *Handler) chunkRequest(k *call) (ChunkRequest, error) {
	r, err := parseChunkRequest(k.get)
	if err != nil {
		return r, err
	}
	if err := r.Check(h.o.Backend.ChunkSize()); err != nil {
		return r, err
	}
	return r, h.object(k)
}

func (h *Handler) getChunk(k *call) error {
	r, err := h.chunkRequest(k)
	if err != nil {
		return err
	}
	return h.sendChunk(k, r)
}

// sendChunk answers with the chunk r names (r passed Check), from r.Off,
// in frames, or raw if the caller asked (see answer.go).
func (h *Handler) sendChunk(k *call, r ChunkRequest) error {
	body, err := h.o.Backend.Chunk(h.o.Context, r)
	if err != nil {
		return err
	}
	n, conn := r.Len-r.Off, k.c.Context().Conn()
	resp := k.c.Response()
	resp.Header.SetContentType("application/octet-stream")
	k.mode = k.chunkMode()
	if k.mode == modeFrames {
		f := newFrameWriter(k.answer, n, body, conn)
		f.hashesIn(h.hashes, hashKey{id: r.ID, off: r.Off, n: r.Len})
		if f.direct() {
			membody.Stream(resp, f, int(framedLen(n)), conn)
		} else {
			resp.SetBodyStream(f, int(framedLen(n)))
		}
		return nil
	}
	if b, ok := wholeBytes(body, n); ok {
		if o, ok := body.(membody.Owner); ok { // bytes lent: closed once sent
			membody.SetOwned(resp, b, conn, o)
		} else {
			membody.Set(resp, b, conn)
		}
		return nil
	}
	resp.SetBodyStream(body, int(n))
	return nil
}

func (h *Handler) putChunk(k *call) error {
	r, err := h.chunkRequest(k)
	if err != nil {
		return err
	}
	if r.Off != 0 || k.body == nil {
		return fmt.Errorf("%w: a chunk is placed whole", ErrBadRequest)
	}
	data := make([]byte, r.Len) // at most ChunkSize (checked)
	if _, err := io.ReadFull(k.signedBody(r.Len), data); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("%w: chunk body: %v", ErrIncompleteBody, err)
		}
		return err
	}
	return h.o.Backend.StoreChunk(r, data)
}

// forget drops an object's cached state, and learns its new version if
// the writer sent one (a write-back object not at the origin yet); with
// all=1 and no object, it drops every object's metadata and listing.
func (h *Handler) forget(k *call) error {
	if k.get("all") == "1" && k.bucket == "" && k.key == "" {
		h.o.Backend.ForgetAll(k.from)
		return nil
	}
	if err := h.object(k); err != nil {
		return err
	}
	var written *store.ObjectInfo
	if v := k.c.Request().Header.Peek(HeaderObject); len(v) > 0 {
		info, err := decodeObject(string(v), k.bucket, k.key)
		if err != nil {
			return err
		}
		if info.ETag == "" {
			return fmt.Errorf("%w: a written version without an ETag", ErrBadRequest)
		}
		written = &info
	}
	h.o.Backend.Forget(k.bucket, k.key, written, k.from)
	return nil
}

// replica keeps (PUT) or drops (DELETE) a write-back copy of the caller's
// object.
func (h *Handler) replica(k *call) error {
	if h.o.Copies == nil {
		return fmt.Errorf("%w: this node keeps no write-back copies", ErrNotSupported)
	}
	if err := h.object(k); err != nil {
		return err
	}
	if string(k.c.Request().Header.Method()) == fiber.MethodDelete {
		return h.o.Copies.Drop(k.from, k.bucket, k.key, k.get("etag"))
	}
	info, err := decodeObject(string(k.c.Request().Header.Peek(HeaderObject)), k.bucket, k.key)
	if err != nil {
		return err
	}
	if k.body == nil {
		return fmt.Errorf("%w: a copy without a body", ErrBadRequest)
	}
	return h.o.Copies.Put(h.o.Context, k.from, info, k.signedBody(info.Size))
}

// first answers an object's info (HeaderObject) and its first chunk (the
// body): the backend's Head, then its Chunk of that version. A member
// cutting objects otherwise is refused before either.
func (h *Handler) first(k *call) error {
	if err := h.object(k); err != nil {
		return err
	}
	chunk := h.o.Backend.ChunkSize()
	if v := k.get("chunk"); v != strconv.FormatInt(chunk, 10) {
		return fmt.Errorf("%w: %d bytes here, %q there", ErrChunkSize, chunk, v)
	}
	info, err := h.o.Backend.Head(h.o.Context, k.bucket, k.key, false)
	if err != nil {
		return err
	}
	v, err := encodeObject(info)
	if err != nil {
		return err
	}
	k.c.Response().Header.Set(HeaderObject, v)
	n := firstLen(info, chunk)
	if n == 0 {
		k.mode = k.chunkMode() // no bytes
		return nil
	}
	return h.sendChunk(k, ChunkRequest{ID: store.ChunkID{Bucket: k.bucket, Key: k.key, ETag: info.ETag}, Len: n, Chunk: chunk})
}

func (h *Handler) head(k *call) error {
	if err := h.object(k); err != nil {
		return err
	}
	var info store.ObjectInfo
	var err error
	if s, ok := h.o.Backend.(StaleHeader); ok && k.get("cached") == "1" && k.get("stale") == "1" {
		info, err = s.HeadStale(k.bucket, k.key)
	} else {
		info, err = h.o.Backend.Head(h.o.Context, k.bucket, k.key, k.get("cached") == "1")
	}
	if err != nil {
		return err
	}
	return k.c.JSON(info)
}
