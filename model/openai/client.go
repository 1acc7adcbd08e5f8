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
	"time"

	"github.com/agentwarden/warden/model"
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
// package documentation for retries and deadlines.
func (c *Client) Complete(ctx context.Context, req model.Request) (model.Response, error) {
	if err := req.Validate(); err != nil {
		return model.Response{}, fmt.Errorf("model/openai: %w", err)
	}
	body, fallbacks, err := encodeRequest(&c.cfg, req)
	if err != nil {
		return model.Response{}, fmt.Errorf("model/openai: %w", err)
	}
	for _, f := range fallbacks {
		c.log.Warn("model/openai: tool sent without strict schema", "tool", f.Tool, "reason", f.Reason)
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancel()

	for attempt := 0; ; attempt++ {
		resp, retryAfter, err := c.attempt(ctx, body)
		if err == nil {
			resp.StrictFallbacks = fallbacks
			return resp, nil
		}
		if !retryable(err) {
			return model.Response{}, fmt.Errorf("model/openai: %w", err)
		}
		if attempt == c.cfg.MaxRetries {
			return model.Response{}, fmt.Errorf("model/openai: giving up after attempt %d: %w", attempt+1, err)
		}
		wait := retryAfter
		if wait <= 0 {
			wait = c.jitter(c.backoff(attempt))
		}
		if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
			return model.Response{}, fmt.Errorf("model/openai: giving up after attempt %d, next wait %s passes the call deadline: %w", attempt+1, wait, err)
		}
		c.log.Warn("model/openai: retrying", "attempt", attempt+1, "wait", wait, "error", err.Error())
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return model.Response{}, fmt.Errorf("model/openai: %w while waiting after attempt %d: %w", stopped(ctx), attempt+1, err)
		case <-t.C:
		}
	}
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

// retryError marks a failure worth sending the same request again for.
type retryError struct{ err error }

func (e retryError) Error() string { return e.err.Error() }
func (e retryError) Unwrap() error { return e.err }

func retryable(err error) bool {
	var r retryError
	return errors.As(err, &r)
}

// attempt sends body once. It returns the provider's requested wait with a
// retryable status error.
func (c *Client) attempt(ctx context.Context, body []byte) (model.Response, time.Duration, error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.AttemptTimeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return model.Response{}, 0, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	if c.cfg.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	hresp, err := c.http.Do(hreq)
	if err != nil {
		return model.Response{}, 0, c.transportError(ctx, actx, err)
	}
	defer hresp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(hresp.Body, c.cfg.MaxResponseBytes+1))
	if err != nil {
		return model.Response{}, 0, c.transportError(ctx, actx, err)
	}
	if int64(len(data)) > c.cfg.MaxResponseBytes {
		return model.Response{}, 0, fmt.Errorf("%w: body exceeds %d bytes", ErrBadResponse, c.cfg.MaxResponseBytes)
	}
	if hresp.StatusCode < 200 || hresp.StatusCode > 299 {
		se := decodeError(hresp.StatusCode, data, c.cfg.APIKey)
		if !se.retryable() {
			return model.Response{}, 0, se
		}
		se.RetryAfter = retryAfter(hresp.Header, time.Now())
		return model.Response{}, se.RetryAfter, retryError{se}
	}
	resp, err := decodeResponse(data)
	return resp, 0, err
}

// transportError classifies a failure to send or read: the call's own
// deadline or cancellation ends the call; an attempt timeout or a network
// failure may be retried.
func (c *Client) transportError(ctx, actx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return stopped(ctx)
	case actx.Err() != nil:
		return retryError{fmt.Errorf("%w: attempt exceeded %s", ErrTimeout, c.cfg.AttemptTimeout)}
	}
	return retryError{fmt.Errorf("%w: %w", ErrNetwork, err)}
}

// stopped describes why the call's context ended: its deadline (ErrTimeout)
// or the caller's cancellation.
func stopped(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: call deadline exceeded: %w", ErrTimeout, ctx.Err())
	}
	return fmt.Errorf("call cancelled: %w", ctx.Err())
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
