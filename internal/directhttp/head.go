// A bodiless GET's head, written as it is: the request line, Host and the
// request's own headers. net/http's Request.Write sorts the headers and
// adds a User-Agent on every call; on a peer hop that was a few percent of
// the relaying node's CPU.
package directhttp

import (
	"bufio"
	"net/http"

	"golang.org/x/net/http/httpguts"
)

// excluded are the headers req.Write leaves out of req.Header (Host and
// the body's framing, which a bodiless GET does not have).
var excluded = map[string]bool{"Host": true, "Content-Length": true, "Transfer-Encoding": true, "Trailer": true}

// writeHead writes req's head to w, or req as net/http writes it if a
// header's name or value could not be sent as it is.
func writeHead(w *bufio.Writer, req *http.Request) error {
	for k, vs := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return req.Write(w)
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return req.Write(w)
			}
		}
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	w.WriteString("GET ")
	w.WriteString(req.URL.RequestURI())
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(host)
	w.WriteString("\r\n")
	if req.Close {
		w.WriteString("Connection: close\r\n")
	}
	for k, vs := range req.Header {
		if excluded[k] {
			continue
		}
		for _, v := range vs {
			w.WriteString(k)
			w.WriteString(": ")
			w.WriteString(v)
			w.WriteString("\r\n")
		}
	}
	_, err := w.WriteString("\r\n")
	return err
}
