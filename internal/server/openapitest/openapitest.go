// Package openapitest holds the API's tests to docs/openapi.json: Check
// wraps a handler so that every answer it gives (and every request body it
// takes) is validated against the document, failing the test on a
// mismatch. The server's own tests and the CLI's use it.
package openapitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentwarden/warden/internal/jsonschema"
	"github.com/agentwarden/warden/internal/testdata"
)

// apiDoc is docs/openapi.json as the checks read it: each operation's
// path template, its request body and response schemas, compiled.
type apiDoc struct {
	ops []*docOp
}

type docOp struct {
	method, template string
	path             *regexp.Regexp
	// literal counts the template's fixed segments: of two templates that
	// match a path, the one with more wins (as in ServeMux).
	literal     int
	bodyNeeded  bool
	requests    map[string]*jsonschema.Schema // by media type; nil schema: not checked
	responses   map[string]map[string]*jsonschema.Schema
	hasResponse map[string]bool
}

var (
	docOnce   sync.Once
	docLoaded *apiDoc
	docErr    error
)

// openAPIDoc loads and compiles the document once for the package's tests.
func openAPIDoc(t testing.TB) *apiDoc {
	t.Helper()
	docOnce.Do(func() { docLoaded, docErr = loadAPIDoc(filepath.Join(testdata.Root(), "docs", "openapi.json")) })
	if docErr != nil {
		t.Fatalf("openapi: %v", docErr)
	}
	return docLoaded
}

type rawMedia struct {
	Schema json.RawMessage `json:"schema"`
}

type rawResponse struct {
	Ref     string              `json:"$ref"`
	Content map[string]rawMedia `json:"content"`
}

func loadAPIDoc(name string) (*apiDoc, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Responses map[string]rawResponse `json:"responses"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	var root map[string]json.RawMessage
	if err := json.Unmarshal(b, &root); err != nil {
		return nil, err
	}
	components := root["components"]
	cache := map[string]*jsonschema.Schema{}
	// compile validates against one schema of the document, with the
	// document's components beside it so that its references
	// (#/components/schemas/…) resolve in place.
	compile := func(schema json.RawMessage) (*jsonschema.Schema, error) {
		text := `{"components":` + string(components) + `,"allOf":[` + string(schema) + `]}`
		if s, ok := cache[text]; ok {
			return s, nil
		}
		s, err := jsonschema.Compile([]byte(text))
		if err != nil {
			return nil, fmt.Errorf("schema %s: %w", schema, err)
		}
		cache[text] = s
		return s, nil
	}
	out := &apiDoc{}
	for tmpl, ops := range doc.Paths {
		re, literal := templatePattern(tmpl)
		for method, raw := range ops {
			var o struct {
				RequestBody *struct {
					Required bool                `json:"required"`
					Content  map[string]rawMedia `json:"content"`
				} `json:"requestBody"`
				Responses map[string]rawResponse `json:"responses"`
			}
			if err := json.Unmarshal(raw, &o); err != nil {
				return nil, fmt.Errorf("%s %s: %w", method, tmpl, err)
			}
			op := &docOp{method: strings.ToUpper(method), template: tmpl, path: re, literal: literal,
				requests: map[string]*jsonschema.Schema{}, responses: map[string]map[string]*jsonschema.Schema{}, hasResponse: map[string]bool{}}
			if rb := o.RequestBody; rb != nil {
				op.bodyNeeded = rb.Required
				for media, m := range rb.Content {
					var s *jsonschema.Schema
					if media == "application/json" {
						if s, err = compile(m.Schema); err != nil {
							return nil, fmt.Errorf("%s %s request: %w", method, tmpl, err)
						}
					}
					op.requests[media] = s
				}
			}
			for status, resp := range o.Responses {
				if resp.Ref != "" {
					name := strings.TrimPrefix(resp.Ref, "#/components/responses/")
					r, ok := doc.Components.Responses[name]
					if !ok {
						return nil, fmt.Errorf("%s %s %s: no response %s", method, tmpl, status, resp.Ref)
					}
					resp = r
				}
				op.hasResponse[status] = true
				op.responses[status] = map[string]*jsonschema.Schema{}
				for media, m := range resp.Content {
					var s *jsonschema.Schema
					if media == "application/json" {
						if s, err = compile(m.Schema); err != nil {
							return nil, fmt.Errorf("%s %s %s: %w", method, tmpl, status, err)
						}
					}
					op.responses[status][media] = s
				}
			}
			out.ops = append(out.ops, op)
		}
	}
	sort.Slice(out.ops, func(i, j int) bool { return out.ops[i].literal > out.ops[j].literal })
	return out, nil
}

// templatePattern turns /v1/sessions/{session} into a pattern of whole
// paths, and counts its fixed segments.
func templatePattern(tmpl string) (*regexp.Regexp, int) {
	var b strings.Builder
	literal := 0
	for _, seg := range strings.Split(strings.TrimPrefix(tmpl, "/"), "/") {
		b.WriteString("/")
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			b.WriteString("[^/]+")
			continue
		}
		literal++
		b.WriteString(regexp.QuoteMeta(seg))
	}
	return regexp.MustCompile("^" + b.String() + "$"), literal
}

// find returns the operation of a request, and whether its path is
// documented at all.
func (d *apiDoc) find(method, path string) (op *docOp, pathKnown bool) {
	for _, o := range d.ops {
		if o.path.MatchString(path) {
			if o.method == method {
				return o, true
			}
			pathKnown = true
		}
	}
	return nil, pathKnown
}

// check validates one exchange against the document.
func (d *apiDoc) check(r *http.Request, reqBody []byte, status int, header http.Header, body []byte) error {
	media, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	op, _ := d.find(r.Method, r.URL.Path)
	if op == nil {
		// No operation: the mux's fallback answers 404 not_found.
		if status != http.StatusNotFound || media != "application/json" {
			return fmt.Errorf("no operation for %s %s, and the answer is %d %s, not the fallback's 404", r.Method, r.URL.Path, status, media)
		}
		return validate(d.errorSchema(), body)
	}
	code := strconv.Itoa(status)
	if !op.hasResponse[code] {
		return fmt.Errorf("%s %s: status %d is not documented (body %.300s)", op.method, op.template, status, body)
	}
	schemas := op.responses[code]
	s, ok := schemas[media]
	if !ok {
		return fmt.Errorf("%s %s %d: content type %q is not documented", op.method, op.template, status, header.Get("Content-Type"))
	}
	if s != nil {
		if err := validate(s, body); err != nil {
			return fmt.Errorf("%s %s %d: %w (body %.500s)", op.method, op.template, status, err, body)
		}
	}
	if status >= 300 || len(op.requests) == 0 {
		return nil
	}
	// A request the server took: its body is what the document describes.
	if len(bytes.TrimSpace(reqBody)) == 0 {
		if op.bodyNeeded {
			return fmt.Errorf("%s %s: answered %d to a request without the body the document requires", op.method, op.template, status)
		}
		return nil
	}
	reqMedia, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if reqMedia == "" {
		reqMedia = "application/json"
	}
	rs, ok := op.requests[reqMedia]
	if !ok {
		return fmt.Errorf("%s %s: answered %d to a request body of type %q the document does not name", op.method, op.template, status, reqMedia)
	}
	if rs != nil {
		if err := validate(rs, shrink(reqBody)); err != nil {
			return fmt.Errorf("%s %s: answered %d to a request body the document refuses: %w", op.method, op.template, status, err)
		}
	}
	return nil
}

// shrink makes a request body larger than the validator takes (a module
// of several MiB in base64) small enough, by cutting its long top-level
// strings to a short base64 value; other bodies stay as they are.
func shrink(body []byte) []byte {
	if len(body) <= jsonschema.MaxDocBytes {
		return body
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return body
	}
	for k, v := range m {
		if len(v) > 1<<10 && v[0] == '"' {
			m[k] = json.RawMessage(`"AA=="`)
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return b
}

func (d *apiDoc) errorSchema() *jsonschema.Schema {
	op, _ := d.find("GET", "/v1/sessions")
	return op.responses["401"]["application/json"]
}

func validate(s *jsonschema.Schema, body []byte) error {
	errs := s.Validate(body)
	if len(errs) == 0 {
		return nil
	}
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, fmt.Sprint(e))
	}
	return fmt.Errorf("the body does not match its schema: %s", strings.Join(msgs, "; "))
}

// Check wraps the API's handler for a test: every answer is checked
// against docs/openapi.json (method, path template, status, content type,
// the JSON body against its schema; an event stream by its content type
// only), and so is the body of every request the server took. A mismatch
// fails the test.
func Check(t testing.TB, h http.Handler) http.Handler {
	doc := openAPIDoc(t)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var reqBody []byte
		if r.Body != nil {
			reqBody, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(reqBody))
		}
		rec := &recording{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		if rec.status == 0 {
			if r.Context().Err() != nil {
				return // the client went away before an answer
			}
			rec.status = http.StatusOK
		}
		if err := doc.check(r, reqBody, rec.status, w.Header(), rec.body.Bytes()); err != nil {
			t.Errorf("openapi: %v", err)
		}
	})
}

// recording passes an answer on and keeps its status and, unless it is an
// event stream, its body.
type recording struct {
	http.ResponseWriter
	status int
	stream bool
	body   bytes.Buffer
}

func (rw *recording) WriteHeader(code int) {
	if rw.status == 0 {
		rw.status = code
		rw.stream = strings.HasPrefix(rw.Header().Get("Content-Type"), "text/event-stream")
	}
	rw.ResponseWriter.WriteHeader(code)
}

func (rw *recording) Write(b []byte) (int, error) {
	if rw.status == 0 {
		rw.WriteHeader(http.StatusOK)
	}
	if !rw.stream {
		rw.body.Write(b)
	}
	return rw.ResponseWriter.Write(b)
}

func (rw *recording) Flush() {
	if f, ok := rw.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (rw *recording) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

// Verify checks one exchange against the document, as Check does for
// each: the request (and the body it carried), the status, the headers
// and the body answered.
func Verify(t testing.TB, r *http.Request, reqBody []byte, status int, header http.Header, body []byte) error {
	return openAPIDoc(t).check(r, reqBody, status, header, body)
}
