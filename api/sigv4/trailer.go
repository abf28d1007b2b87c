// The trailer section of an aws-chunked body: "name:value" lines after the
// final chunk, each declared in x-amz-trailer, and for the signed mode an
// x-amz-trailer-signature line chained from the final chunk's signature.
// Clients differ in line endings (AWS SDKs end lines with CRLF, minio-go
// with LF and an empty line between the trailers and the signature), so
// lines may end with LF or CRLF and empty lines are skipped; the section
// runs to the end of the body.
package sigv4

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"

	"github.com/granary-dev/granary/api/s3err"
)

// readTrailers reads the trailer section to the end of the body.
func (c *chunkedReader) readTrailers() error {
	var sig []byte
	read := 0
	for {
		line, err := c.readLine(true)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return trailerErr(err)
		}
		if read += len(line) + 2; read > maxTrailerBytes {
			return malformedTrailer("The trailer section is too large.")
		}
		line = trimSpaceBytes(line)
		if len(line) == 0 {
			continue
		}
		if sig != nil {
			return malformedTrailer("Data follows the trailer signature.")
		}
		name, value := cutByte(line, ':')
		name, value = bytes.ToLower(trimSpaceBytes(name)), trimSpaceBytes(value)
		if c.cfg.signed && c.cfg.trailers && string(name) == trailerSigName {
			sig = bytes.Clone(value)
			continue
		}
		if err := c.addTrailer(name, value); err != nil {
			return err
		}
	}
	return c.checkTrailers(sig)
}

// addTrailer records one declared trailer.
func (c *chunkedReader) addTrailer(name, value []byte) error {
	if !c.cfg.trailers {
		return malformedTrailer("Unexpected data after the final chunk.")
	}
	if len(name) == 0 || len(value) == 0 {
		return malformedTrailer("A trailer line is not name:value.")
	}
	n := string(name)
	declared := false
	for _, d := range c.cfg.declared {
		declared = declared || d == n
	}
	if !declared {
		return malformedTrailer("The trailer " + quoteShort(n) + " was not declared in x-amz-trailer.")
	}
	if _, dup := c.trailer(n); dup {
		return malformedTrailer("The trailer " + quoteShort(n) + " is repeated.")
	}
	c.got = append(c.got, queryPair{n, string(value)})
	return nil
}

// checkTrailers requires every declared trailer and, in the signed mode,
// a trailer signature over them.
func (c *chunkedReader) checkTrailers(sig []byte) error {
	for _, d := range c.cfg.declared {
		if _, ok := c.trailer(d); !ok {
			return malformedTrailer("The request did not include the trailer " + quoteShort(d) + ".")
		}
	}
	if !c.cfg.signed || !c.cfg.trailers {
		return nil
	}
	if sig == nil {
		return malformedTrailer("The trailer section has no x-amz-trailer-signature.")
	}
	// The signed form of the trailers is "name:value\n" for each, in the
	// order they were sent.
	h := sha256.New()
	for _, t := range c.got {
		h.Write([]byte(t.key + ":" + t.value + "\n"))
	}
	var sum [32]byte
	b := c.stringToSign("AWS4-HMAC-SHA256-TRAILER")
	b = hex.AppendEncode(b, h.Sum(sum[:0]))
	return c.verifySig(b, sig, "The trailer signature does not match.")
}

// trailer implements trailerSource.
func (c *chunkedReader) trailer(name string) (string, bool) {
	for _, t := range c.got {
		if t.key == name {
			return t.value, true
		}
	}
	return "", false
}

// trailerErr maps a read error inside the trailer section.
func trailerErr(err error) error {
	if _, ok := s3err.As(err); ok {
		return malformedTrailer("A trailer line is too long.")
	}
	return err
}

func malformedTrailer(msg string) *s3err.Error {
	return s3err.New(s3err.MalformedTrailerError, msg)
}
