// Signed calls to a node's admin API (/_granary/...): the same SigV4
// credentials as S3 requests, so a node needs no second secret for them.
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/minio/minio-go/v7/pkg/signer"
)

// emptySHA256 is the hex SHA-256 of an empty body.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// adminCall sends a signed bodiless request to node's admin path (say
// "/_granary/flush") with query q, and returns the response if its status
// is 200. Any other status is an error carrying the node's message.
func adminCall(ctx context.Context, getenv Getenv, node remote, method, path string, q url.Values) (*http.Response, error) {
	creds, err := clientCredentials(getenv)
	if err != nil {
		return nil, err
	}
	u := node.url + path
	if len(q) > 0 {
		u += "?" + strings.ReplaceAll(q.Encode(), "+", "%20")
	}
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Amz-Content-Sha256", emptySHA256)
	req = signer.SignV4(*req, creds.access, creds.secret, "", creds.region)
	resp, err := (&http.Client{Transport: node.transport()}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, node.url, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, adminMessage(msg))
	}
	return resp, nil
}

// adminMessage extracts the Code and Message of an S3 error document, or
// returns the body as it is.
func adminMessage(body []byte) string {
	s := string(body)
	code, msg := between(s, "<Code>", "</Code>"), between(s, "<Message>", "</Message>")
	if code == "" {
		return strings.TrimSpace(s)
	}
	return code + ": " + msg
}

func between(s, open, close string) string {
	i := strings.Index(s, open)
	if i < 0 {
		return ""
	}
	s = s[i+len(open):]
	j := strings.Index(s, close)
	if j < 0 {
		return ""
	}
	return s[:j]
}
