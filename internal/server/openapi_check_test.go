package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/server/openapitest"
	"github.com/agentwarden/warden/internal/testdata"
)

// checkAPI validates every answer of h against docs/openapi.json
// (openapitest.Check).
func checkAPI(t testing.TB, h http.Handler) http.Handler { return openapitest.Check(t, h) }

// TestCheckAPIRefuses: the check fails an answer the document does not
// describe.
func TestCheckAPIRefuses(t *testing.T) {
	t.Parallel()
	get := func(path string) *http.Request {
		r, _ := http.NewRequest("GET", path, nil)
		return r
	}
	post := func(path, ct string) *http.Request {
		r, _ := http.NewRequest("POST", path, nil)
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		return r
	}
	js := http.Header{"Content-Type": {"application/json"}}
	tests := []struct {
		name    string
		req     *http.Request
		reqBody string
		status  int
		header  http.Header
		body    string
		want    string
	}{
		{"a task", get("/v1/sessions/s1/tasks/t1"), "", 200, js, `{"id":"t1","objective":"x","status":"DONE"}`, ""},
		{"an unknown status", get("/v1/sessions/s1/tasks/t1"), "", 200, js, `{"id":"t1","objective":"x","status":"GONE"}`,
			"GET /v1/sessions/{session}/tasks/{task} 200: the body does not match its schema"},
		{"a field too many", get("/v1/sessions/s1/tasks/t1"), "", 200, js, `{"id":"t1","objective":"x","status":"DONE","extra":1}`,
			"GET /v1/sessions/{session}/tasks/{task} 200: the body does not match its schema"},
		{"an undocumented status", get("/v1/sessions/s1/tasks/t1"), "", 418, js, `{}`,
			"GET /v1/sessions/{session}/tasks/{task}: status 418 is not documented"},
		{"an error in another shape", get("/v1/sessions/s1"), "", 404, js, `{"code":"x"}`,
			"GET /v1/sessions/{session} 404: the body does not match its schema"},
		{"plain text", get("/v1/sessions/s1"), "", 404, http.Header{"Content-Type": {"text/plain"}}, `no`,
			`GET /v1/sessions/{session} 404: content type "text/plain" is not documented`},
		{"no route, the fallback", get("/v2/x"), "", 404, js, `{"error":{"code":"not_found","message":"no route"}}`, ""},
		{"no route, another answer", get("/v2/x"), "", 200, js, `{}`, "no operation for GET /v2/x"},
		{"a request body the document refuses", post("/v1/approvals/a1", ""), `{"decision":"MAYBE"}`, 200, js,
			`{"task":{"id":"t1","objective":"x","status":"DONE"},"events":[]}`,
			"POST /v1/approvals/{approval}: answered 200 to a request body the document refuses"},
		{"a request media type not named", post("/v1/approvals/a1", "text/plain"), `x`, 200, js,
			`{"task":{"id":"t1","objective":"x","status":"DONE"},"events":[]}`,
			`POST /v1/approvals/{approval}: answered 200 to a request body of type "text/plain" the document does not name`},
		{"a refused request is not checked", post("/v1/approvals/a1", ""), `{"decision":"MAYBE"}`, 400, js,
			`{"error":{"code":"invalid_request","message":"x"}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := openapitest.Verify(t, tt.req, []byte(tt.reqBody), tt.status, tt.header, []byte(tt.body))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// TestServeOpenAPI: GET /openapi.json needs no key and serves
// docs/openapi.json.
func TestServeOpenAPI(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	resp, err := f.ts.Client().Get(f.ts.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	want, err := os.ReadFile(filepath.Join(testdata.Root(), "docs", "openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" || !bytes.Equal(b, want) {
		t.Fatalf("GET /openapi.json: %d %s, %d bytes, want docs/openapi.json (%d bytes)", resp.StatusCode, resp.Header.Get("Content-Type"), len(b), len(want))
	}
	var doc struct {
		OpenAPI string `json:"openapi"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi = %q, %v", doc.OpenAPI, err)
	}
}
