package main

import (
	"net/http"
	"strings"

	"github.com/agentwarden/warden/internal/console"
)

// apiPrefixes are the paths the API keeps: the console never answers them,
// whatever it embeds.
var apiPrefixes = []string{"/v1/", "/admin/", "/healthz", "/readyz", "/openapi.json", "/metrics"}

// mountConsole routes the API and the operator console on the serving mux:
// a GET or HEAD of the console's page or one of its files is the console's,
// every other request the API's (an unknown path keeps the API's 404).
func mountConsole(mux *http.ServeMux, api http.Handler) {
	ui, err := console.Embedded()
	if err != nil {
		// The embedded files are fixed at build time: a console that cannot
		// read them is a broken build, and the API still serves.
		mux.Handle("/", api)
		return
	}
	mux.Handle("/", consoleRoutes(ui, api))
}

func consoleRoutes(ui *console.Console, api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && !isAPIPath(r.URL.Path) && ui.Has(r.URL.Path) {
			ui.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

func isAPIPath(p string) bool {
	for _, pre := range apiPrefixes {
		if p == strings.TrimSuffix(pre, "/") || strings.HasPrefix(p, pre) {
			return true
		}
	}
	return false
}
