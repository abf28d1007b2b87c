package console

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
)

func testApp(t *testing.T) (*fiber.App, *Handler) {
	t.Helper()
	h, err := New(Options{Region: "eu-west-3"})
	if err != nil {
		t.Fatal(err)
	}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Use(func(c *fiber.Ctx) error {
		if !Match(c.Request().URI().PathOriginal()) {
			return c.SendStatus(http.StatusTeapot)
		}
		h.Serve(c)
		return nil
	})
	return app, h
}

func get(t *testing.T, app *fiber.App, method, target string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// The page names its script and style sheet by version, carries the
// region, and has no inline script for the CSP to refuse.
func TestPage(t *testing.T) {
	app, h := testApp(t)
	resp, page := get(t, app, "GET", Prefix, nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" || resp.Header.Get("Cache-Control") != cachePage {
		t.Fatalf("page: %d %v", resp.StatusCode, resp.Header)
	}
	for _, want := range []string{`content="eu-west-3"`, `href="console.css?v=` + h.files["console.css"].hash + `"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	// Every script, by version, in the order they run (console.js first:
	// the others use its helpers).
	at := -1
	for _, name := range scripts {
		i := strings.Index(page, `<script src="`+name+`?v=`+h.files[name].hash+`" defer></script>`)
		if i <= at {
			t.Errorf("script %s: at %d, after %d", name, i, at)
		}
		at = i
	}
	if regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`).MatchString(page) || regexp.MustCompile(`\son[a-z]+\s*=`).MatchString(page) {
		t.Error("the page has inline script")
	}
	if regexp.MustCompile(`<input[^>]*type="password"[^>]*name=`).MatchString(page) {
		t.Error("the secret field has a name: a form submitted without the script would send it")
	}
	for _, kv := range securityHeaders {
		if resp.Header.Get(kv[0]) != kv[1] {
			t.Errorf("%s: %q", kv[0], resp.Header.Get(kv[0]))
		}
	}
	if !strings.Contains(resp.Header.Get("Content-Security-Policy"), "form-action 'none'") {
		t.Error("forms may be submitted")
	}
}

func TestCachingAndErrors(t *testing.T) {
	app, h := testApp(t)
	js := h.files["console.js"]
	cases := []struct {
		method, target string
		hdr            map[string]string
		status         int
		cache, ctype   string
	}{
		{"GET", Prefix + "console.js?v=" + js.hash, nil, 200, cacheVersioned, "text/javascript; charset=utf-8"},
		{"GET", Prefix + "console.js?v=old", nil, 200, cachePage, "text/javascript; charset=utf-8"},
		{"GET", Prefix + "console.css", nil, 200, cachePage, "text/css; charset=utf-8"},
		{"HEAD", Prefix, nil, 200, cachePage, "text/html; charset=utf-8"},
		{"GET", Prefix + "console.js", map[string]string{"If-None-Match": js.etag}, 304, cachePage, ""},
		{"GET", Prefix + "index.html", nil, 404, "no-store", "text/plain; charset=utf-8"},
		{"GET", Prefix + "../admin", nil, 404, "no-store", "text/plain; charset=utf-8"},
		{"POST", Prefix, nil, 405, "no-store", "text/plain; charset=utf-8"},
		{"GET", "/_granary/console", nil, 308, "no-store", "text/plain; charset=utf-8"},
		{"GET", "/_granary/consoles", nil, http.StatusTeapot, "", ""},
	}
	for _, c := range cases {
		resp, _ := get(t, app, c.method, c.target, c.hdr)
		if resp.StatusCode != c.status || resp.Header.Get("Cache-Control") != c.cache || (c.ctype != "" && resp.Header.Get("Content-Type") != c.ctype) {
			t.Errorf("%s %s: %d %q %q, want %d %q %q", c.method, c.target, resp.StatusCode,
				resp.Header.Get("Cache-Control"), resp.Header.Get("Content-Type"), c.status, c.cache, c.ctype)
		}
		if c.status != http.StatusTeapot && resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s: no nosniff", c.method, c.target)
		}
	}
	if resp, _ := get(t, app, "GET", "/_granary/console", nil); resp.Header.Get("Location") != Prefix {
		t.Errorf("redirect to %q", resp.Header.Get("Location"))
	}
}

// A browser sent from / lands on the console, with the console's headers.
func TestRedirect(t *testing.T) {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/", func(c *fiber.Ctx) error { Redirect(c); return nil })
	resp, _ := get(t, app, "GET", "/", nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != Prefix || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("redirect: %d %v", resp.StatusCode, resp.Header)
	}
}
