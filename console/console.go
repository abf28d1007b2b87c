// Package console serves the node's web console under /_granary/console/:
// one page, its scripts (one per panel) and style sheet, embedded in the
// binary; Redirect sends a browser that opened the node's address there. The
// assets are public (they hold no data); everything the page shows it
// fetches from the signed admin API, which filters by the caller's policy.
//
// Sign-in design: the page signs its own API calls with SigV4 (WebCrypto).
// From the secret typed in, it derives the day's SigV4 signing keys (for
// today and tomorrow, UTC), imports them as non-extractable CryptoKeys and
// forgets the secret, which never leaves the browser, is never stored
// (not in localStorage, sessionStorage or a cookie) and cannot be read
// back even by script running in the page. A session cookie would add a
// second credential to protect (CSRF, expiry, revocation) for no gain: the
// node already verifies SigV4 on every call, with the same policies as
// S3. A reload signs out. WebCrypto exists only in a secure context, so
// the console works over HTTPS, or plain HTTP on a loopback address (an
// SSH tunnel, kubectl port-forward); elsewhere the page says so.
package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"net/http"
	"path"

	"github.com/gofiber/fiber/v2"
)

// Prefix starts every console path.
const Prefix = "/_granary/console/"

//go:embed assets
var assets embed.FS

// Security headers of every console response: no script, style or
// connection but the node's own, no inline script, no framing, no form
// submission (the sign-in form is handled by script, and its secret field
// has no name, so a page whose script failed cannot post it anywhere).
var securityHeaders = [][2]string{
	{"Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
		"connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"},
	{"X-Content-Type-Options", "nosniff"},
	{"X-Frame-Options", "DENY"},
	{"Referrer-Policy", "no-referrer"},
	{"Cross-Origin-Opener-Policy", "same-origin"},
	{"Cross-Origin-Resource-Policy", "same-origin"},
}

// Cache policies: the page is revalidated on every load (its ETag makes
// that a 304), so a new node version's page is seen at once; it names the
// script and style sheet with their hash, so those may be kept a year.
const (
	cachePage      = "no-cache"
	cacheVersioned = "public, max-age=31536000, immutable"
)

// scripts are the page's scripts, in the order they run: console.js
// first, whose helpers (window.granary) the others use.
var scripts = []string{"console.js", "charts.js", "origin.js", "browser.js", "writeback.js"}

// asset is one file as served.
type asset struct {
	body  []byte
	ctype string
	etag  string // quoted
	hash  string // the first hex digits of its SHA-256: its version
}

// Handler serves the console. It is immutable once built.
type Handler struct {
	files map[string]*asset // by name under Prefix; "" is the page
}

// Options configure a Handler.
type Options struct {
	// Region is what the page signs its calls for (the node's region).
	Region string
}

// New builds the Handler: it reads the embedded assets and renders the
// page with the region and the assets' versions.
func New(o Options) (*Handler, error) {
	h := &Handler{files: map[string]*asset{}}
	files := map[string]string{"console.css": "text/css; charset=utf-8"}
	for _, name := range scripts {
		files[name] = "text/javascript; charset=utf-8"
	}
	for name, ctype := range files {
		b, err := assets.ReadFile(path.Join("assets", name))
		if err != nil {
			return nil, fmt.Errorf("console: %w", err)
		}
		h.files[name] = newAsset(b, ctype)
	}
	var tags []string
	for _, name := range scripts {
		tags = append(tags, name+"?v="+h.files[name].hash)
	}
	page, err := template.ParseFS(assets, "assets/index.html")
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	var buf bytes.Buffer
	err = page.Execute(&buf, map[string]any{
		"Region":  o.Region,
		"Scripts": tags,
		"CSS":     "console.css?v=" + h.files["console.css"].hash,
	})
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	h.files[""] = newAsset(buf.Bytes(), "text/html; charset=utf-8")
	return h, nil
}

func newAsset(b []byte, ctype string) *asset {
	sum := sha256.Sum256(b)
	hash := hex.EncodeToString(sum[:8])
	return &asset{body: b, ctype: ctype, etag: `"` + hash + `"`, hash: hash}
}

// Match reports whether path is the console's: /_granary/console or
// anything under /_granary/console/.
func Match(path []byte) bool {
	root := Prefix[:len(Prefix)-1]
	return string(path) == root || bytes.HasPrefix(path, []byte(Prefix))
}

// Serve answers a request whose path Match accepted. It needs no
// credentials: the assets hold no data.
func (h *Handler) Serve(c *fiber.Ctx) {
	resp := &c.Response().Header
	for _, kv := range securityHeaders {
		resp.Set(kv[0], kv[1])
	}
	req := c.Request()
	method := string(req.Header.Method())
	if method != http.MethodGet && method != http.MethodHead {
		resp.Set("Allow", "GET, HEAD")
		plain(c, http.StatusMethodNotAllowed, "the console is read with GET\n")
		return
	}
	p := string(req.URI().PathOriginal())
	if p == Prefix[:len(Prefix)-1] {
		resp.Set("Location", Prefix)
		plain(c, http.StatusPermanentRedirect, "the console is at "+Prefix+"\n")
		return
	}
	a, ok := h.files[p[len(Prefix):]]
	if !ok {
		plain(c, http.StatusNotFound, "no such console file\n")
		return
	}
	cache := cachePage
	if v := req.URI().QueryArgs().Peek("v"); a != h.files[""] && string(v) == a.hash {
		cache = cacheVersioned
	}
	resp.Set("Cache-Control", cache)
	resp.Set("ETag", a.etag)
	if string(req.Header.Peek("If-None-Match")) == a.etag {
		c.Response().SetStatusCode(http.StatusNotModified)
		return
	}
	resp.SetContentType(a.ctype)
	c.Response().SetStatusCode(http.StatusOK)
	c.Response().SetBodyRaw(a.body)
}

// Redirect sends a browser that opened the node's address to the
// console (303: the console is read with GET whatever the visit was).
func Redirect(c *fiber.Ctx) {
	for _, kv := range securityHeaders {
		c.Response().Header.Set(kv[0], kv[1])
	}
	c.Response().Header.Set("Location", Prefix)
	plain(c, http.StatusSeeOther, "the console is at "+Prefix+"\n")
}

// plain answers a short text message.
func plain(c *fiber.Ctx, status int, msg string) {
	c.Response().Header.Set("Cache-Control", "no-store")
	c.Response().Header.SetContentType("text/plain; charset=utf-8")
	c.Response().SetStatusCode(status)
	c.Response().SetBodyString(msg)
}
