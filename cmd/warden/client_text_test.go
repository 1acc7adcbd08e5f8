package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Tool and model text reaches the terminal through the client: what a
// terminal would act on is shown as U+FFFD.
func TestPrintable(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"plain 市场部", "plain 市场部"},
		{"a\x1b[31mred\x1b[0m", "a\uFFFD[31mred\uFFFD[0m"},
		{"bell\a\x00\u009b", "bell\uFFFD\uFFFD\uFFFD"},
		{"tab\there", "tab here"},
	} {
		if got := printable(tt.in); got != tt.want {
			t.Errorf("printable(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := oneLine("a\r\nb\x1b"); got != "a ⏎ b\uFFFD" {
		t.Errorf("oneLine = %q", got)
	}
}

// An id is sent as given: escaped once in the request line, "/" and "%"
// included, under a server URL with a path of its own.
func TestRequestPath(t *testing.T) {
	t.Parallel()
	var got struct{ path, raw string }
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.path, got.raw = r.URL.Path, r.URL.EscapedPath()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{}`))
	}))
	defer ts.Close()
	c, err := newAPIClient(ts.URL+"/warden/", "k", "", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.send(context.Background(), request{method: http.MethodGet, path: "/v1/approvals/" + pathID("a b/c%d")}); err != nil {
		t.Fatal(err)
	}
	if got.path != "/warden/v1/approvals/a b/c%d" || got.raw != "/warden/v1/approvals/a%20b%2Fc%25d" {
		t.Fatalf("server saw path %q (escaped %q)", got.path, got.raw)
	}
}
