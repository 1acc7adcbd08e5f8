package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentwarden/warden/internal/model"
)

// Client is a model.Model over an OpenAI-compatible chat-completions
// endpoint. It is safe for concurrent use.
type Client struct {
	cfg      Config
	endpoint string
	http     *http.Client
	log      *slog.Logger
	// jitter draws the actual wait from a backoff ceiling d.
	jitter func(d time.Duration) time.Duration
	// warned holds the strict fallbacks logged already.
	warned sync.Map
	// refused holds, by toolKey, why the provider refused a tool's strict
	// schema: such a tool is sent non-strict from then on.
	refused sync.Map
}

var _ model.Model = (*Client)(nil)

// New validates cfg and returns a Client. The error wraps ErrConfig.
func New(cfg Config) (*Client, error) {
	endpoint, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, endpoint: endpoint, http: cfg.HTTPClient, log: cfg.Logger, jitter: equalJitter}
	if c.http == nil {
		c.http = &http.Client{}
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// equalJitter returns a wait drawn uniformly from [d/2, d], so that clients
// throttled together do not retry together, yet never retry at once.
func equalJitter(d time.Duration) time.Duration {
	half := d / 2
	return half + rand.N(d-half+1)
}

// Complete sends req and returns the first choice's assistant turn. See the
// package documentation for retries and deadlines. A provider failure is a
// *model.ProviderError, matched by its kind (model.ErrRateLimited, …).
func (c *Client) Complete(ctx context.Context, req model.Request) (resp model.Response, err error) {
	ctx, span := c.startCall(ctx)
	defer func() { endCall(span, resp, err) }()
	if err := req.Validate(); err != nil {
		return model.Response{}, fmt.Errorf("model/openai: %w", err)
	}
	enc, err := encodeRequest(&c.cfg, req, c.refusal)
	if err != nil {
		return model.Response{}, fmt.Errorf("model/openai: %w", err)
	}
	for _, f := range enc.fallbacks {
		// Once per tool and reason: the same catalogue is sent every turn.
		if _, seen := c.warned.LoadOrStore(f, true); !seen {
			c.log.Warn("model/openai: tool sent without strict schema", "tool", f.Tool, "reason", f.Reason)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancel()

	// resent counts the requests sent again with a tool made non-strict;
	// they do not use up the retry budget.
	resent := 0
	for attempt := 1; ; attempt++ {
		resp, pe, retry, err := c.attempt(ctx, enc.body)
		if err != nil {
			return model.Response{}, fmt.Errorf("model/openai: %w", err)
		}
		if pe == nil {
			resp.StrictFallbacks = enc.fallbacks
			for i, tc := range resp.Message.ToolCalls {
				resp.Message.ToolCalls[i].Arguments = enc.restore[tc.Name].restore(tc.Arguments)
			}
			return resp, nil
		}
		pe.Attempts = attempt
		if i := strictRefusal(pe, req.Tools, enc.strict); i >= 0 {
			t := req.Tools[i]
			c.refused.Store(toolKey(t), "the provider refused its strict schema: "+pe.Message)
			c.log.Warn("model/openai: the provider refused a strict schema; sending the tool non-strict", "tool", t.Name, "error", pe.Message)
			if enc, err = encodeRequest(&c.cfg, req, c.refusal); err != nil {
				return model.Response{}, fmt.Errorf("model/openai: %w", err)
			}
			resent++
			continue
		}
		if !retry {
			return model.Response{}, fmt.Errorf("model/openai: %w", pe)
		}
		if attempt-resent > c.cfg.MaxRetries {
			return model.Response{}, fmt.Errorf("model/openai: giving up: %w", pe)
		}
		wait := pe.RetryAfter
		if wait <= 0 {
			wait = c.jitter(c.backoff(attempt - resent - 1))
		}
		if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
			return model.Response{}, fmt.Errorf("model/openai: giving up, the next wait of %s passes the call deadline: %w", wait, pe)
		}
		c.log.Warn("model/openai: retrying", "attempt", attempt, "wait", wait, "error", pe.Error())
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return model.Response{}, fmt.Errorf("model/openai: the call deadline passed while waiting to retry: %w", pe)
			}
			return model.Response{}, fmt.Errorf("model/openai: call cancelled while waiting to retry (%w): %w", ctx.Err(), pe)
		case <-t.C:
		}
	}
}

// refusal says why the provider refused t's strict schema, "" if it did
// not.
func (c *Client) refusal(t model.Tool) string {
	if v, ok := c.refused.Load(toolKey(t)); ok {
		return v.(string)
	}
	return ""
}

// toolKey identifies a tool by name and schema: a tool whose schema
// changes (a new MCP server version) is tried strict again.
func toolKey(t model.Tool) string { return t.Name + "\x00" + string(t.Parameters) }

// strictRefusal returns the index of the strict tool a 400 objects to, or
// -1: OpenAI names it in error.param ("tools[2].function.parameters"), and
// by name in the message ("Invalid schema for function 'x'").
func strictRefusal(pe *model.ProviderError, tools []model.Tool, strict []bool) int {
	if pe.Kind != model.ErrBadRequest {
		return -1
	}
	if rest, ok := strings.CutPrefix(pe.Param, "tools["); ok {
		if n, _, ok := strings.Cut(rest, "]"); ok {
			if i, err := strconv.Atoi(n); err == nil && i >= 0 && i < len(tools) && strict[i] {
				return i
			}
		}
	}
	if pe.Code == "invalid_function_parameters" || strings.Contains(pe.Message, "Invalid schema for function") {
		for i, t := range tools {
			if strict[i] && strings.Contains(pe.Message, "'"+t.Name+"'") {
				return i
			}
		}
	}
	return -1
}

// backoff is the ceiling of the wait before retry n+1.
func (c *Client) backoff(n int) time.Duration {
	d := c.cfg.InitialBackoff
	for range n {
		d *= 2
		if d >= c.cfg.MaxBackoff {
			return c.cfg.MaxBackoff
		}
	}
	return min(d, c.cfg.MaxBackoff)
}

// attempt sends body once. It returns the reply, or the provider's failure
// and whether it is worth another attempt, or (as err) the caller's
// cancellation.
func (c *Client) attempt(ctx context.Context, body []byte) (model.Response, *model.ProviderError, bool, error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.AttemptTimeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return model.Response{}, nil, false, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	if c.cfg.Stream {
		hreq.Header.Set("Accept", "text/event-stream")
	} else {
		hreq.Header.Set("Accept", "application/json")
	}
	if c.cfg.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	readErr := func(err error) (*model.ProviderError, bool, error) { return c.transportError(ctx, actx, err) }
	hresp, err := c.http.Do(hreq)
	if err != nil {
		pe, retry, stop := readErr(err)
		return model.Response{}, pe, retry, stop
	}
	defer hresp.Body.Close()
	if hresp.StatusCode >= 200 && hresp.StatusCode <= 299 && c.cfg.Stream && isEventStream(hresp.Header) {
		return decodeStream(hresp.Body, c.cfg.MaxResponseBytes, c.cfg.APIKey, readErr)
	}
	data, err := io.ReadAll(io.LimitReader(hresp.Body, c.cfg.MaxResponseBytes+1))
	if err != nil {
		pe, retry, stop := readErr(err)
		return model.Response{}, pe, retry, stop
	}
	if int64(len(data)) > c.cfg.MaxResponseBytes {
		return model.Response{}, &model.ProviderError{Kind: model.ErrMalformed, Status: hresp.StatusCode,
			Message: fmt.Sprintf("the body exceeds %d bytes", c.cfg.MaxResponseBytes)}, false, nil
	}
	if hresp.StatusCode < 200 || hresp.StatusCode > 299 {
		pe, retry := decodeError(hresp.StatusCode, data, hresp.Header.Get("Content-Type"), c.cfg.APIKey)
		pe.RetryAfter = retryAfter(hresp.Header, time.Now())
		return model.Response{}, pe, retry, nil
	}
	resp, pe, retry := decodeResponse(data, hresp.Header.Get("Content-Type"), c.cfg.APIKey)
	return resp, pe, retry, nil
}

// isEventStream reports a reply sent as server-sent events.
func isEventStream(h http.Header) bool {
	mt, _, _ := strings.Cut(h.Get("Content-Type"), ";")
	return strings.EqualFold(strings.TrimSpace(mt), "text/event-stream")
}

// transportError classifies a failure to send or read: the caller's
// cancellation ends the call (err); the call's deadline is a timeout not
// worth retrying; an attempt timeout or a network failure may be retried.
func (c *Client) transportError(ctx, actx context.Context, err error) (*model.ProviderError, bool, error) {
	switch {
	case ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, false, fmt.Errorf("call cancelled: %w", ctx.Err())
	case ctx.Err() != nil:
		return &model.ProviderError{Kind: model.ErrTimeout, Message: "the call deadline passed", Err: ctx.Err()}, false, nil
	case actx.Err() != nil:
		return &model.ProviderError{Kind: model.ErrTimeout, Message: fmt.Sprintf("the attempt exceeded %s", c.cfg.AttemptTimeout), Err: actx.Err()}, true, nil
	}
	return &model.ProviderError{Kind: model.ErrUnavailable, Message: redact(err.Error(), c.cfg.APIKey), Err: err}, true, nil
}

// retryAfter reads the provider's requested wait: "retry-after-ms"
// (milliseconds, sent by OpenAI), else "Retry-After" in seconds or as an
// HTTP date. It returns zero when there is none or it cannot be read.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
