// Fuzz targets: the Authorization header parser and the aws-chunked
// decoder on arbitrary input (no panic, no hang, never more bytes than
// declared).
package sigv4

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/granary-dev/granary/api/s3err"
)

func FuzzParseAuthorization(f *testing.F) {
	for _, s := range []string{
		"AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=" + strings.Repeat("ab", 32),
		"AWS4-HMAC-SHA256 Credential=a/b/c/d/e/f,SignedHeaders=host,Signature=x",
		"AWS4-HMAC-SHA256  Signature=x , Credential=k/20200101//s3/aws4_request SignedHeaders=host",
		"AWS AK:sig", "AWS4-HMAC-SHA256", "", "AWS4-HMAC-SHA256 =,=,=",
	} {
		f.Add(s)
	}
	v := fixedVerifier(time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC))
	f.Fuzz(func(t *testing.T, s string) {
		a, err := parseAuthorization(s)
		if err != nil {
			wantCode(t, err, s3err.AuthorizationHeaderMalformed)
		} else {
			for _, field := range []string{a.Credential, a.SignedHeaders, a.Signature} {
				if field == "" || strings.ContainsAny(field, ", \t") {
					t.Fatalf("bad field %q from %q", field, s)
				}
			}
			again, err := parseAuthorization(fmt.Sprintf("%s Credential=%s, SignedHeaders=%s, Signature=%s",
				algorithm, a.Credential, a.SignedHeaders, a.Signature))
			if err != nil || again != a {
				t.Fatalf("round trip of %q: %+v %v", s, again, err)
			}
			parseCredential(a.Credential)
		}
		// The whole of Verify must answer with an S3 error, never panic.
		r := &Request{Method: "GET", RawPath: "/b/k", Host: "h", ContentLength: 0, Header: headerOf(http.Header{
			"Authorization": {s}, "X-Amz-Date": {"20130524T000000Z"}, "X-Amz-Content-Sha256": {emptySHA256},
		})}
		if _, err := v.Verify(r); err != nil {
			if _, ok := s3err.As(err); !ok {
				t.Fatalf("non-S3 error %v", err)
			}
		}
	})
}

// fuzzChunkCfg is a fixed signing context for the decoder fuzz target.
func fuzzChunkCfg(mode byte, decoded int64) chunkedConfig {
	cfg := chunkedConfig{
		signed:   mode&1 == 0,
		trailers: mode&2 != 0,
		decoded:  decoded,
		amzDate:  "20130524T000000Z",
		scope:    "20130524/us-east-1/s3/aws4_request",
	}
	if cfg.trailers {
		cfg.declared = []string{"x-amz-checksum-crc32"}
	}
	copy(cfg.key[:], refKey(testSK, "20130524", "us-east-1"))
	copy(cfg.seed[:], bytes.Repeat([]byte{0x5a}, 32))
	return cfg
}

// fuzzSeed frames data for cfg with the reference signer.
func fuzzSeed(cfg chunkedConfig, data []byte, sizes []int) []byte {
	key := refKey(testSK, "20130524", "us-east-1")
	prev := fmt.Sprintf("%x", cfg.seed)
	var b bytes.Buffer
	header := func(p []byte) {
		if cfg.signed {
			prev = refChunkSig(key, cfg.amzDate, cfg.scope, prev, p)
			fmt.Fprintf(&b, "%x;chunk-signature=%s\r\n", len(p), prev)
		} else {
			fmt.Fprintf(&b, "%x\r\n", len(p))
		}
	}
	for _, n := range sizes {
		header(data[:n])
		b.Write(data[:n])
		b.WriteString("\r\n")
		data = data[n:]
	}
	header(nil)
	if cfg.trailers {
		line := fmt.Sprintf("x-amz-checksum-crc32:%s", b64(crc32BE(payloadOf(40))))
		b.WriteString(line + "\r\n")
		if cfg.signed {
			b.WriteString(trailerSigName + ":" + refTrailerSig(key, cfg.amzDate, cfg.scope, prev, line+"\n") + "\r\n")
		}
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

func crc32BE(b []byte) []byte {
	s := crc32.ChecksumIEEE(b)
	return []byte{byte(s >> 24), byte(s >> 16), byte(s >> 8), byte(s)}
}

func FuzzChunkedReader(f *testing.F) {
	data := payloadOf(40)
	for mode := byte(0); mode < 4; mode++ {
		f.Add(fuzzSeed(fuzzChunkCfg(mode, 40), data, []int{10, 30}), uint32(40), mode)
		f.Add(fuzzSeed(fuzzChunkCfg(mode, 40), data, []int{40}), uint32(40), mode)
	}
	f.Add([]byte("ffffffffffffffff\r\n"), uint32(1<<20), byte(1))
	f.Add([]byte("5\r\nabc"), uint32(5), byte(1))
	f.Fuzz(func(t *testing.T, wire []byte, decoded uint32, mode byte) {
		cfg := fuzzChunkCfg(mode, int64(decoded%(1<<20)))
		cr := newChunkedReader(bytes.NewReader(wire), cfg)
		var checks []check
		if cfg.trailers {
			checks = []check{{h: crc32.NewIEEE(), trailer: "x-amz-checksum-crc32", code: s3err.BadDigest, size: 4}}
		}
		body := newVerifyReader(cr, cfg.decoded, checks, cr)
		got, err := readBounded(t, body, len(wire))
		if int64(len(got)) > cfg.decoded {
			t.Fatalf("returned %d bytes, declared %d", len(got), cfg.decoded)
		}
		if err == nil && int64(len(got)) != cfg.decoded {
			t.Fatalf("clean end after %d of %d bytes", len(got), cfg.decoded)
		}
		if err != nil {
			if _, ok := s3err.As(err); !ok {
				t.Fatalf("non-S3 error %v", err)
			}
		}
	})
}

// readBounded reads body with small reads and fails if it makes no
// progress: every call must return data or an error, within a bound set by
// the input size.
func readBounded(t *testing.T, body io.Reader, inputLen int) ([]byte, error) {
	var out []byte
	buf := make([]byte, 7)
	for calls := 0; ; calls++ {
		if calls > 2*inputLen+16 {
			t.Fatalf("no end after %d reads of a %d-byte input", calls, inputLen)
		}
		n, err := body.Read(buf)
		out = append(out, buf[:n]...)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// The fuzz seeds are valid bodies: the decoder's good path is in the corpus.
func TestFuzzSeedsDecode(t *testing.T) {
	data := payloadOf(40)
	for mode := byte(0); mode < 4; mode++ {
		cfg := fuzzChunkCfg(mode, 40)
		if cfg.trailers {
			data = payloadOf(40)
		}
		wire := fuzzSeed(cfg, data, []int{10, 30})
		cr := newChunkedReader(bytes.NewReader(wire), cfg)
		var checks []check
		if cfg.trailers {
			checks = []check{{h: crc32.NewIEEE(), trailer: "x-amz-checksum-crc32", code: s3err.BadDigest, size: 4}}
		}
		got, err := io.ReadAll(newVerifyReader(cr, 40, checks, cr))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("mode %d: %d bytes, %v", mode, len(got), err)
		}
	}
}
