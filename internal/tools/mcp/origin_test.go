package mcp

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

func TestOriginOf(t *testing.T) {
	t.Parallel()
	tests := []struct{ url, want string }{
		{"https://Example.COM/mcp", "https://example.com:443"},
		{"https://example.com:443/x", "https://example.com:443"},
		{"http://example.com/mcp", "http://example.com:80"},
		{"http://example.com:8080/mcp", "http://example.com:8080"},
		{"http://[::1]:9/mcp", "http://[::1]:9"},
	}
	for _, tt := range tests {
		u, err := url.Parse(tt.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := originOf(u); got != tt.want {
			t.Errorf("originOf(%s) = %s, want %s", tt.url, got, tt.want)
		}
	}
}

// TestTransportHeadersByOrigin: the transport adds the configured headers
// to requests for the configured origin only, whoever sends the request.
func TestTransportHeadersByOrigin(t *testing.T) {
	t.Parallel()
	seen := func() (*httptest.Server, *string) {
		var got string
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got = r.Header.Get("Authorization") + "|" + r.Header.Get("X-Tenant")
		}))
		t.Cleanup(ts.Close)
		return ts, &got
	}
	home, homeGot := seen()
	other, otherGot := seen()
	u, _ := url.Parse(home.URL)
	h := http.Header{}
	h.Set("Authorization", "Bearer t0k")
	h.Set("X-Tenant", "acme")
	tr := &httpTransport{next: http.DefaultTransport, headers: h, origin: originOf(u), peek: (&hints{}).peek}
	for _, tt := range []struct {
		url  string
		got  *string
		want string
	}{
		{home.URL + "/mcp", homeGot, "Bearer t0k|acme"},
		{other.URL + "/mcp", otherGot, "|"},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, tt.url, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if *tt.got != tt.want {
			t.Errorf("%s saw %q, want %q", tt.url, *tt.got, tt.want)
		}
	}
}
