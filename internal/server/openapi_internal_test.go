package server

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestOpenAPIInDocs: docs/openapi.json is the document the server serves.
func TestOpenAPIInDocs(t *testing.T) {
	t.Parallel()
	docs, err := os.ReadFile(filepath.Join("..", "..", "docs", "openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(docs, openAPI) {
		t.Fatal("docs/openapi.json differs from server/openapi.json, the document the server serves: edit server/openapi.json, then run cp server/openapi.json docs/openapi.json")
	}
}

// TestOpenAPIRoutes: every route of the mux has an operation in the
// document, and every operation is routed.
func TestOpenAPIRoutes(t *testing.T) {
	t.Parallel()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	var documented []string
	for path, ops := range doc.Paths {
		for method := range ops {
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options", "trace":
				documented = append(documented, strings.ToUpper(method)+" "+path)
			}
		}
	}
	var routed []string
	for _, rt := range (&Server{}).routes() {
		routed = append(routed, rt.pattern)
	}
	slices.Sort(documented)
	slices.Sort(routed)
	for _, r := range routed {
		if !slices.Contains(documented, r) {
			t.Errorf("route %s has no operation in server/openapi.json", r)
		}
	}
	for _, d := range documented {
		if !slices.Contains(routed, d) {
			t.Errorf("operation %s of server/openapi.json is not routed", d)
		}
	}
}
