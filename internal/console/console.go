// Package console serves Warden's operator console: the web front end in
// web/ (Vite and Preact), built by make console into assets/app and
// embedded into warden. The console is a client of the public API only: it
// holds no key of its own and reaches nothing the key it is given cannot.
//
// A warden built before the front end (a fresh clone, go build) embeds no
// console and serves a page that says how to build it.
package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed all:assets
var assets embed.FS

// Dir is the directory of the built console inside the embedded assets.
const Dir = "assets/app"

// Security headers of every page the console serves: its scripts, styles
// and requests come from this origin only, and no other site may frame it.
const csp = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; " +
	"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Console serves the files of a built console.
type Console struct {
	files map[string]file
	built bool
}

type file struct {
	body []byte
	etag string
}

// Embedded is the console built into this binary.
func Embedded() (*Console, error) {
	sub, err := fs.Sub(assets, Dir)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	return New(sub)
}

// New serves the console whose built files are fsys (index.html at its
// root). An fsys without index.html is a console not built.
func New(fsys fs.FS) (*Console, error) {
	c := &Console{files: map[string]file{}}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		c.files["/"+p] = file{body: b, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil && !isNotExist(err) {
		return nil, fmt.Errorf("console: read assets: %w", err)
	}
	_, c.built = c.files["/index.html"]
	return c, nil
}

func isNotExist(err error) bool { return err != nil && errors.Is(err, fs.ErrNotExist) }

// Built reports whether the console's front end was built into it.
func (c *Console) Built() bool { return c.built }

// Has reports whether the console serves path: its page ("/",
// "/index.html") and the files of its build. Every other path belongs to
// the API.
func (c *Console) Has(p string) bool {
	if p == "/" || p == "/index.html" {
		return true
	}
	_, ok := c.files[p]
	return ok && c.built
}

// ServeHTTP serves the console's page or one of its files. Hashed build
// files are immutable; the page is revalidated on every load so a new
// build shows at once.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	p := r.URL.Path
	if p == "/" {
		p = "/index.html"
	}
	if !c.built {
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(notBuilt))
		return
	}
	f, ok := c.files[p]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if strings.HasPrefix(p, "/assets/") {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	h.Set("ETag", f.etag)
	http.ServeContent(w, r, path.Base(p), time.Time{}, bytes.NewReader(f.body))
}

// notBuilt is the page of a warden built without its console.
const notBuilt = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="color-scheme" content="light dark">
<title>Warden console not built</title></head>
<body>
<h1>Console not built: run make console</h1>
<p>This warden was built without its web console. Run <code>make console</code>
(or <code>make build</code>) in the source tree, then rebuild warden. The API is
served as usual under <code>/v1/</code> and <code>/admin/v1/</code>.</p>
</body></html>
`
