package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func newTest(t *testing.T, h http.HandlerFunc, prefix string) *Client {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	u, err := url.Parse(ts.URL + prefix)
	if err != nil {
		t.Fatal(err)
	}
	return New(u, "k")
}

// An id is sent as given: escaped once in the request line, "/" and "%"
// included, under a server URL with a path of its own.
func TestRequestPath(t *testing.T) {
	t.Parallel()
	var got struct{ path, raw, auth string }
	c := newTest(t, func(w http.ResponseWriter, r *http.Request) {
		got.path, got.raw, got.auth = r.URL.Path, r.URL.EscapedPath(), r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{}`))
	}, "/warden/")
	if _, _, err := c.Send(context.Background(), Request{Method: http.MethodGet, Path: "/v1/approvals/" + PathID("a b/c%d")}); err != nil {
		t.Fatal(err)
	}
	if got.path != "/warden/v1/approvals/a b/c%d" || got.raw != "/warden/v1/approvals/a%20b%2Fc%25d" {
		t.Fatalf("server saw path %q (escaped %q)", got.path, got.raw)
	}
	if got.auth != "Bearer k" {
		t.Fatalf("Authorization = %q", got.auth)
	}
}

// An error answer is an *APIError: the API's code and message, or the
// status and what a proxy said.
func TestAPIError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   APIError
	}{
		{"api", 404, `{"error":{"code":"not_found","message":"no session s1"}}`, APIError{404, "not_found", "no session s1"}},
		{"proxy", 502, "bad gateway\n", APIError{502, "http_502", "Bad Gateway: bad gateway"}},
		{"empty", 503, "", APIError{503, "http_503", "Service Unavailable: no error body"}},
		{"long", 500, strings.Repeat("x", 300), APIError{500, "http_500", "Internal Server Error: " + strings.Repeat("x", 200) + "…"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newTest(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body))
			}, "")
			_, err := c.Call(context.Background(), Request{Method: http.MethodGet, Path: "/v1/sessions"}, nil)
			var ae *APIError
			if !errors.As(err, &ae) || *ae != tc.want {
				t.Fatalf("err = %#v, want %#v", err, tc.want)
			}
			if err.Error() != tc.want.Code+": "+tc.want.Message {
				t.Fatalf("err = %q", err)
			}
		})
	}
}

// A server that cannot be reached is ErrUnreachable, named by its URL.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	u, _ := url.Parse("http://" + addr)
	_, err = New(u, "k").Call(context.Background(), Request{Method: http.MethodGet, Path: "/v1/sessions"}, nil)
	if !errors.Is(err, ErrUnreachable) || !strings.HasPrefix(err.Error(), "cannot reach the server at http://"+addr+": ") {
		t.Fatalf("err = %v", err)
	}
}

// An answer that is not the JSON a call reads is an error naming the call.
func TestBadAnswer(t *testing.T) {
	t.Parallel()
	c := newTest(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`[1]`)) }, "")
	var out struct{ ID string }
	_, err := c.Call(context.Background(), Request{Method: http.MethodGet, Path: "/v1/sessions/s"}, &out)
	if err == nil || !strings.HasPrefix(err.Error(), "the answer to GET /v1/sessions/s is not what the client reads: ") {
		t.Fatalf("err = %v", err)
	}
}
