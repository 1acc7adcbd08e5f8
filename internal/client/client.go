// Package client is a typed client of warden serve's HTTP API: the calls
// warden's client commands make (sessions, tasks, approvals, plugins,
// skills, slots, instances). An error answer of the API is an *APIError.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client sends requests to one server with one API key.
type Client struct {
	base *url.URL
	key  string
	http *http.Client
}

// New is a client of the API at base (an http:// or https:// URL, with or
// without a path prefix) sending key.
func New(base *url.URL, key string) *Client {
	u := *base
	u.Path = strings.TrimSuffix(u.Path, "/")
	// No overall timeout: a ?wait= answer and an event stream take their
	// time; connecting does not.
	tr := &http.Transport{Proxy: http.ProxyFromEnvironment, DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		TLSHandshakeTimeout: 10 * time.Second}
	return &Client{base: &u, key: key, http: &http.Client{Transport: tr}}
}

// Request is one API request.
type Request struct {
	Method, Path string // Path is escaped: ids in it through PathID
	Query        url.Values
	Body         []byte
	ContentType  string
	Header       http.Header
}

// JSONRequest is a request with v as its JSON body.
func JSONRequest(method, path string, query url.Values, v any) Request {
	b, _ := json.Marshal(v)
	return Request{Method: method, Path: path, Query: query, Body: b, ContentType: "application/json"}
}

// PathID escapes an id for a request's path, which is in escaped form.
func PathID(id string) string { return url.PathEscape(id) }

// Send sends r and returns the answer's status and body; an error answer
// of the API is an *APIError, with the body returned too.
func (c *Client) Send(ctx context.Context, r Request) (int, []byte, error) {
	resp, err := c.Open(ctx, r)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("read the answer to %s %s: %w", r.Method, r.Path, err)
	}
	return resp.StatusCode, b, nil
}

// Open sends r and returns the response as it comes, for a stream; an
// error answer is read and returned as an *APIError.
func (c *Client) Open(ctx context.Context, r Request) (*http.Response, error) {
	u := *c.base
	// r.Path is escaped (PathID): it extends the escaped path, and Path is
	// its unescaped form, so an id is sent as given, "/" and "%" included.
	u.RawPath = strings.TrimSuffix(c.base.EscapedPath(), "/") + r.Path
	p, err := url.PathUnescape(u.RawPath)
	if err != nil {
		return nil, fmt.Errorf("warden: request path %s: %w", r.Path, err)
	}
	u.Path = p
	u.RawQuery = r.Query.Encode()
	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("request %s %s: %w", r.Method, r.Path, err)
	}
	for k, vs := range r.Header {
		req.Header[k] = vs
	}
	if r.ContentType != "" {
		req.Header.Set("Content-Type", r.ContentType)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s %s: %w", r.Method, r.Path, ctx.Err())
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, &unreachable{server: c.base.Redacted(), err: err}
	}
	if resp.StatusCode >= 400 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, refusal(resp.StatusCode, b)
	}
	return resp, nil
}

// Call sends r and decodes its JSON answer into out (unless nil); it
// returns the answer as the API sent it.
func (c *Client) Call(ctx context.Context, r Request, out any) ([]byte, error) {
	_, b, err := c.Send(ctx, r)
	if err != nil {
		return nil, err
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return b, fmt.Errorf("the answer to %s %s is not what the client reads: %w", r.Method, r.Path, err)
		}
	}
	return b, nil
}
