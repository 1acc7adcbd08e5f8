package console_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/agentwarden/warden/internal/console"
)

func TestConsole(t *testing.T) {
	t.Parallel()
	built := fstest.MapFS{
		"index.html":         {Data: []byte("<!doctype html><title>Warden console</title>")},
		"assets/index-1.js":  {Data: []byte("console.log(1)")},
		"assets/index-1.css": {Data: []byte("body{}")},
	}
	tests := []struct {
		name    string
		fsys    fstest.MapFS
		path    string
		has     bool
		status  int
		body    string
		ctype   string
		caching string
	}{
		{"page", built, "/", true, 200, "<title>Warden console</title>", "text/html; charset=utf-8", "no-cache"},
		{"page by name", built, "/index.html", true, 200, "<title>Warden console</title>", "text/html; charset=utf-8", "no-cache"},
		{"script", built, "/assets/index-1.js", true, 200, "console.log(1)", "text/javascript; charset=utf-8", "public, max-age=31536000, immutable"},
		{"style", built, "/assets/index-1.css", true, 200, "body{}", "text/css; charset=utf-8", "public, max-age=31536000, immutable"},
		{"unknown file", built, "/assets/nope.js", false, 404, "", "", ""},
		{"not built", fstest.MapFS{}, "/", true, 503, "Console not built: run make console", "text/html; charset=utf-8", "no-store"},
		{"not built, a file", fstest.MapFS{"README.md": {Data: []byte("x")}}, "/README.md", false, 503, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := console.New(tt.fsys)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Has(tt.path); got != tt.has {
				t.Fatalf("Has(%q) = %v, want %v", tt.path, got, tt.has)
			}
			if !tt.has {
				return
			}
			rec := httptest.NewRecorder()
			c.ServeHTTP(rec, httptest.NewRequest("GET", tt.path, nil))
			if rec.Code != tt.status || !strings.Contains(rec.Body.String(), tt.body) {
				t.Fatalf("GET %s: %d %q, want %d with %q", tt.path, rec.Code, rec.Body.String(), tt.status, tt.body)
			}
			h := rec.Header()
			if h.Get("Content-Type") != tt.ctype || h.Get("Cache-Control") != tt.caching {
				t.Fatalf("GET %s: Content-Type %q Cache-Control %q, want %q %q", tt.path, h.Get("Content-Type"), h.Get("Cache-Control"), tt.ctype, tt.caching)
			}
			if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
				t.Fatalf("GET %s: Content-Security-Policy %q", tt.path, csp)
			}
		})
	}
}

// TestConsoleRevalidates answers a repeated load with 304 from its ETag.
func TestConsoleRevalidates(t *testing.T) {
	t.Parallel()
	c, err := console.New(fstest.MapFS{"index.html": {Data: []byte("<p>hi</p>")}})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	etag := rec.Header().Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("If-None-Match", etag)
	rec = httptest.NewRecorder()
	c.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotModified {
		t.Fatalf("revalidation: %d, want 304", rec.Code)
	}
}

// TestEmbedded reads the console built into this package, or the page
// saying it is not built.
func TestEmbedded(t *testing.T) {
	t.Parallel()
	c, err := console.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	want := http.StatusServiceUnavailable
	if c.Built() {
		want = http.StatusOK
	}
	if rec.Code != want {
		t.Fatalf("GET /: %d, want %d (built %v)", rec.Code, want, c.Built())
	}
}
