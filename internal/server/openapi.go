package server

import (
	_ "embed"
	"net/http"
)

// openAPI is the OpenAPI 3.1 description of the API, served at GET
// /openapi.json. docs/openapi.json is the same file: the tests check the
// two are identical, that every route has an operation and every
// operation a route, and validate every answer of the API tests against
// it.
//
//go:embed openapi.json
var openAPI []byte

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(openAPI)
}
