package mcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentwarden/warden/internal/chain"
)

// options are the SDK client's handlers of what the server sends unasked.
func (c *Client) options() *sdk.ClientOptions {
	o := &sdk.ClientOptions{
		Logger:                      c.log,
		ElicitationHandler:          c.elicit,
		ProgressNotificationHandler: c.progress,
		ToolListChangedHandler:      c.toolsChanged,
		LoggingMessageHandler: func(_ context.Context, r *sdk.LoggingMessageRequest) {
			c.log.Info("tools/mcp: server log", "server", c.name, "level", string(r.Params.Level), "logger", r.Params.Logger, "data", r.Params.Data)
		},
	}
	if c.cfg.SamplingHandler != nil {
		o.CreateMessageHandler = c.cfg.SamplingHandler
	}
	return o
}

// elicit answers elicitation/create: the configured handler, else decline.
func (c *Client) elicit(ctx context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	if c.cfg.ElicitationHandler != nil {
		return c.cfg.ElicitationHandler(ctx, r)
	}
	c.log.Info("tools/mcp: elicitation declined", "server", c.name, "message", r.Params.Message)
	return &sdk.ElicitResult{Action: "decline"}, nil
}

// samplingMessage is the error a server gets for sampling/createMessage when
// no SamplingHandler is configured.
const samplingMessage = "sampling is not offered: warden does not lend the agent's model to tool servers"

// refuseSampling answers sampling/createMessage with a clear error when no
// handler is configured (the SDK's own answer does not say why).
func (c *Client) refuseSampling(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method == "sampling/createMessage" && c.cfg.SamplingHandler == nil {
			c.log.Info("tools/mcp: sampling refused", "server", c.name)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: samplingMessage}
		}
		return next(ctx, method, req)
	}
}

// progress routes a progress notification to its call: the invoker's
// deadline moves (chain.ReportProgress) and the call's span records it.
func (c *Client) progress(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
	v, ok := c.calls.Load(fmt.Sprint(r.Params.ProgressToken))
	if !ok {
		return
	}
	ctx := v.(context.Context)
	p := chain.Progress{Progress: r.Params.Progress, Total: r.Params.Total, Message: r.Params.Message}
	trace.SpanFromContext(ctx).AddEvent("mcp.progress", trace.WithAttributes(
		attribute.String("mcp.server", c.name),
		attribute.Float64("mcp.progress", p.Progress),
		attribute.Float64("mcp.total", p.Total),
		attribute.String("mcp.message", p.Message)))
	chain.ReportProgress(ctx, p)
}

// peek sees every message from the server before the SDK decodes it.
func (c *Client) peek(msg []byte) {
	c.hints.peek(msg)
	c.exact.received(msg)
}

// httpClient is the configured client with the headers and the hints' tap
// on its transport.
func (c *Client) httpClient() *http.Client {
	hc := http.Client{}
	if c.cfg.HTTPClient != nil {
		hc = *c.cfg.HTTPClient
	}
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	h := http.Header{}
	for k, v := range c.cfg.Headers {
		h.Set(k, v)
	}
	if c.cfg.BearerToken != "" {
		h.Set("Authorization", "Bearer "+c.cfg.BearerToken)
	}
	t := &httpTransport{next: next, headers: h, peek: c.peek, sent: c.exact.sent}
	if u, err := url.Parse(c.cfg.URL); err == nil {
		t.origin = originOf(u)
	}
	hc.Transport = t
	if len(h) > 0 {
		// The headers and the token are the endpoint's: a redirect that
		// would take the request (and so them, were they added there) to
		// another origin is refused, with a clear error.
		check := hc.CheckRedirect
		hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
			if o := originOf(req.URL); o != t.origin {
				return fmt.Errorf("tools/mcp: %s: refusing a redirect to another origin (%s): the configured token and headers are for %s only; configure the URL the server redirects to", c.name, o, t.origin)
			}
			if check != nil {
				return check(req, via)
			}
			if len(via) >= 10 { // net/http's default policy
				return errors.New("stopped after 10 redirects")
			}
			return nil
		}
	}
	return &hc
}

// originOf is a URL's scheme and host, lower case, with the scheme's
// default port made explicit: "https://example.com:443".
func originOf(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}
