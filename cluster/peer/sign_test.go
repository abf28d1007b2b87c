// The signature's bytes: members of different versions must sign alike.
package peer

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// TestSignatureWireFormat: a signature is the HMAC of the method, path,
// query and each signed header ("lower-case-name:value", sorted), each
// followed by a newline, whatever case and type the headers came in; the
// signature's own header, the body trailer and other headers are not
// signed.
func TestSignatureWireFormat(t *testing.T) {
	secret := []byte(testSecret)
	var fromStrings, fromBytes signed
	for _, s := range []*signed{&fromStrings, &fromBytes} {
		*s = signed{method: "GET", path: RouteChunk, query: "bucket=b&key=k"}
	}
	headers := [][2]string{
		{"X-Granary-Peer-To", "n1"}, {"x-granary-peer", "n2"}, {"X-GRANARY-PEER-TIME", "1700000000000"},
		{HeaderSig, "not signed"}, {TrailerBody, "not signed"}, {"Content-Type", "not signed"}, {"X-Granary", "short"},
	}
	for _, h := range headers {
		addHeader(&fromStrings, h[0], h[1])
		addHeader(&fromBytes, []byte(h[0]), []byte(h[1]))
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("GET\n" + RouteChunk + "\nbucket=b&key=k\n" +
		"x-granary-peer-time:1700000000000\nx-granary-peer-to:n1\nx-granary-peer:n2\n"))
	want := hex.EncodeToString(m.Sum(nil))
	if got := fromStrings.signature(newSecretMAC(secret)); got != want {
		t.Errorf("signature from strings %s, want %s (headers %q)", got, want, fromStrings.headers)
	}
	if got := fromBytes.signature(newSecretMAC(secret)); got != want {
		t.Errorf("signature from bytes %s, want %s (headers %q)", got, want, fromBytes.headers)
	}
	if got := fromBytes.header(HeaderTo); got != "n1" {
		t.Errorf("the recipient header reads %q", got)
	}
}
