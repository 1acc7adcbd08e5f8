package main

import "net/http"

// mountConsole routes the API (and, once built, the operator console) on
// the serving mux.
func mountConsole(mux *http.ServeMux, api http.Handler) {
	mux.Handle("/", api)
}
