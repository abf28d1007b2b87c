// The aws-chunked decoder: "hex-size[;chunk-signature=sig]\r\n data \r\n"
// frames ending with a 0-size chunk and, for the *-TRAILER modes, trailing
// headers. Signed chunks are chained from the seed signature and verified
// before their data is released; the unsigned mode streams data through
// and leaves the final byte to the verifyReader above it.
package sigv4

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"

	"github.com/granary-dev/granary/api/s3err"
)

const (
	// maxChunkSize bounds one chunk, which the signed mode buffers whole.
	maxChunkSize = 16 << 20
	// maxTrailerBytes bounds the trailer section; maxTrailers its entries.
	maxTrailerBytes = 16 << 10
	maxTrailers     = 16
	// lineBuffer bounds a chunk header or trailer line.
	lineBuffer = 4096

	trailerSigName = "x-amz-trailer-signature"
)

// chunkedConfig describes one aws-chunked body.
type chunkedConfig struct {
	signed   bool     // chunks carry chained signatures
	trailers bool     // a trailer section follows the final chunk
	declared []string // the x-amz-trailer names, lower case
	decoded  int64    // x-amz-decoded-content-length
	key      [32]byte // signing key (signed only)
	seed     [32]byte // the request signature (signed only)
	amzDate  string
	scope    string
}

// chunkedReader decodes an aws-chunked body. It returns io.EOF only after
// the final chunk, its signature and the trailers were verified.
type chunkedReader struct {
	cfg   chunkedConfig
	br    *bufio.Reader
	total int64 // sum of the chunk sizes framed so far

	// signed mode: the chain and the verified chunk being released.
	mac  hash.Hash
	prev [64]byte // hex of the previous signature in the chain
	sig  [64]byte // the current chunk's signature, as sent
	sts  []byte   // string-to-sign scratch
	data []byte   // chunk buffer, reused
	out  []byte   // verified bytes of data not yet returned

	left     int64 // unsigned mode: bytes of the current chunk not yet read
	needCRLF bool  // a chunk's data ended; its CRLF comes next
	got      []queryPair
	done     bool
	err      error
}

func newChunkedReader(raw io.Reader, cfg chunkedConfig) *chunkedReader {
	c := &chunkedReader{cfg: cfg, br: bufio.NewReaderSize(raw, lineBuffer)}
	if cfg.signed {
		c.mac = hmac.New(sha256.New, cfg.key[:])
		hex.Encode(c.prev[:], cfg.seed[:])
	}
	return c
}

// Read implements io.Reader.
func (c *chunkedReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, c.err
	}
	for {
		switch {
		case c.err != nil:
			return 0, c.err
		case len(c.out) > 0:
			n := copy(p, c.out)
			c.out = c.out[n:]
			return n, nil
		case c.left > 0:
			return c.readData(p)
		case c.done:
			return 0, io.EOF
		}
		c.err = c.next()
	}
}

// readData streams unsigned chunk data.
func (c *chunkedReader) readData(p []byte) (int, error) {
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.br.Read(p)
	c.left -= int64(n)
	if err != nil && (c.left > 0 || !errors.Is(err, io.EOF)) {
		c.err = framingErr(err)
	}
	if n > 0 {
		return n, nil
	}
	return 0, c.err
}

// next reads the next frame: the CRLF closing the previous chunk, a chunk
// header, and either a signed chunk's data or the final chunk and trailers.
func (c *chunkedReader) next() error {
	if c.needCRLF {
		if err := c.readCRLF(); err != nil {
			return err
		}
		c.needCRLF = false
	}
	size, err := c.readHeader()
	if err != nil {
		return err
	}
	if size > c.cfg.decoded-c.total {
		return errTooLong()
	}
	c.total += size
	if size == 0 {
		return c.finish()
	}
	c.needCRLF = true
	if !c.cfg.signed {
		c.left = size
		return nil
	}
	buf, err := c.readChunk(int(size))
	if err != nil {
		return err
	}
	if err := c.verifyChunk(buf); err != nil {
		return err
	}
	c.out = buf
	return nil
}

// readChunk reads a signed chunk's data into c.data. The buffer grows as
// data arrives, so a header announcing a large chunk costs memory only
// when the data is really sent.
func (c *chunkedReader) readChunk(size int) ([]byte, error) {
	buf := c.data[:0]
	for len(buf) < size {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(size, max(2*cap(buf), 64<<10)))
			copy(grown, buf)
			buf = grown
		}
		n, err := io.ReadFull(c.br, buf[len(buf):min(size, cap(buf))])
		buf = buf[:len(buf)+n]
		if err != nil {
			return nil, framingErr(err)
		}
	}
	c.data = buf
	return buf, nil
}

// finish handles the final chunk: its signature, the trailers, the length.
func (c *chunkedReader) finish() error {
	if c.cfg.signed {
		if err := c.verifyChunk(nil); err != nil {
			return err
		}
	}
	if err := c.readTrailers(); err != nil {
		return err
	}
	if c.total != c.cfg.decoded {
		return s3err.New(s3err.IncompleteBody, "The aws-chunked body is shorter than x-amz-decoded-content-length.")
	}
	c.done = true
	return nil
}

// readHeader parses "hex-size[;ext...]" and, when signed, keeps the
// chunk-signature extension in c.sig.
func (c *chunkedReader) readHeader() (int64, error) {
	line, err := c.readLine(false)
	if err != nil {
		return 0, framingErr(err)
	}
	sizePart, ext := cutByte(line, ';')
	size, ok := parseChunkSize(trimSpaceBytes(sizePart))
	if !ok {
		return 0, s3err.New(s3err.InvalidArgument, "Malformed aws-chunked chunk size.")
	}
	if size > maxChunkSize {
		return 0, s3err.New(s3err.InvalidArgument, "aws-chunked chunk larger than 16 MiB.")
	}
	if !c.cfg.signed {
		return size, nil
	}
	for len(ext) > 0 {
		var e []byte
		e, ext = cutByte(ext, ';')
		name, val := cutByte(trimSpaceBytes(e), '=')
		if string(name) == "chunk-signature" {
			val = trimSpaceBytes(val)
			if len(val) != len(c.sig) {
				return 0, s3err.New(s3err.SignatureDoesNotMatch, "The chunk signature is malformed.")
			}
			copy(c.sig[:], val)
			return size, nil
		}
	}
	return 0, s3err.New(s3err.InvalidArgument, "aws-chunked chunk without chunk-signature.")
}

// verifyChunk checks the current chunk's signature, chained from the
// previous one, and advances the chain.
func (c *chunkedReader) verifyChunk(data []byte) error {
	sum := sha256.Sum256(data)
	b := c.stringToSign("AWS4-HMAC-SHA256-PAYLOAD")
	b = append(b, emptySHA256...)
	b = append(b, '\n')
	b = hex.AppendEncode(b, sum[:])
	return c.verifySig(b, c.sig[:], "The chunk signature does not match.")
}

// stringToSign starts a chunk or trailer string to sign in c.sts.
func (c *chunkedReader) stringToSign(alg string) []byte {
	b := append(c.sts[:0], alg...)
	b = append(b, '\n')
	b = append(b, c.cfg.amzDate...)
	b = append(b, '\n')
	b = append(b, c.cfg.scope...)
	b = append(b, '\n')
	b = append(b, c.prev[:]...)
	return append(b, '\n')
}

// verifySig compares HMAC(key, sts) with the hex signature sig and, when
// they match, makes it the previous signature of the chain.
func (c *chunkedReader) verifySig(sts, sig []byte, msg string) error {
	c.sts = sts
	c.mac.Reset()
	c.mac.Write(sts)
	var sum [32]byte
	mac := c.mac.Sum(sum[:0])
	if !sigEqual(mac, sig) {
		return s3err.New(s3err.SignatureDoesNotMatch, msg)
	}
	hex.Encode(c.prev[:], mac)
	return nil
}

// readCRLF consumes the "\r\n" that closes a chunk's data.
func (c *chunkedReader) readCRLF() error {
	var b [2]byte
	if _, err := io.ReadFull(c.br, b[:]); err != nil {
		return framingErr(err)
	}
	if b != [2]byte{'\r', '\n'} {
		return s3err.New(s3err.InvalidArgument, "aws-chunked chunk data not followed by CRLF.")
	}
	return nil
}

// readLine returns the next line without its "\n" or "\r\n"; the slice is
// valid until the next read. A line that does not fit lineBuffer is an
// error, and so is a last line without its newline unless lastOK (the
// trailer section tolerates it).
func (c *chunkedReader) readLine(lastOK bool) ([]byte, error) {
	line, err := c.br.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return nil, s3err.New(s3err.InvalidArgument, "aws-chunked line too long.")
	case errors.Is(err, io.EOF) && len(line) > 0 && lastOK:
	case errors.Is(err, io.EOF) && len(line) > 0:
		return nil, io.ErrUnexpectedEOF
	case err != nil:
		return nil, err
	}
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// framingErr maps a read error inside the framing: a body that ends early
// is IncompleteBody; s3err errors and I/O errors pass through.
func framingErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return s3err.New(s3err.IncompleteBody, "The aws-chunked body ended early.")
	}
	return err
}

// parseChunkSize parses 1 to 16 hex digits.
func parseChunkSize(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var n uint64
	for _, ch := range b {
		if !isHex(ch) {
			return 0, false
		}
		n = n<<4 | uint64(unhex(ch))
	}
	if n > 1<<62 {
		return 0, false
	}
	return int64(n), true
}

func cutByte(b []byte, sep byte) (before, after []byte) {
	for i, ch := range b {
		if ch == sep {
			return b[:i], b[i+1:]
		}
	}
	return b, nil
}

func trimSpaceBytes(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}
