package openai

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// ErrConfig is returned by New for a Config it cannot run with.
var ErrConfig = errors.New("invalid config")

// ErrRateLimited is matched by errors for HTTP 429 replies.
var ErrRateLimited = errors.New("rate limited")

// ErrServer is matched by errors for HTTP 5xx replies.
var ErrServer = errors.New("server error")

// ErrAuth is matched by errors for HTTP 401 and 403 replies.
var ErrAuth = errors.New("authentication failed")

// ErrBadRequest is matched by errors for other 4xx replies: the provider
// refused this request as sent.
var ErrBadRequest = errors.New("request refused")

// ErrBadResponse is returned for a reply that is not a chat completion: not
// JSON, no choices, an unknown tool call type, an unexpected status.
var ErrBadResponse = errors.New("malformed response")

// ErrNetwork is matched by errors for transport failures (connection refused,
// reset, TLS).
var ErrNetwork = errors.New("network error")

// ErrTimeout is matched by errors for an attempt or call that ran out of time.
var ErrTimeout = errors.New("timeout")

// StatusError is a non-2xx reply. errors.Is matches it against
// ErrRateLimited, ErrServer, ErrAuth or ErrBadRequest by status.
type StatusError struct {
	StatusCode int
	// Type and Code are the provider's "error.type" and "error.code", if any.
	Type string
	Code string
	// Message is the provider's "error.message" (API key redacted), or the
	// start of the body when it is not an error object.
	Message string
	// RetryAfter is the wait the provider asked for; zero when none.
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.Code != "" {
		s += " (" + e.Code + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Is matches e against the sentinel of its status class.
func (e *StatusError) Is(target error) bool {
	switch target {
	case ErrRateLimited:
		return e.StatusCode == http.StatusTooManyRequests
	case ErrServer:
		return e.StatusCode >= 500
	case ErrAuth:
		return e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden
	case ErrBadRequest:
		return e.StatusCode >= 400 && e.StatusCode < 500 && e.StatusCode != http.StatusTooManyRequests &&
			e.StatusCode != http.StatusUnauthorized && e.StatusCode != http.StatusForbidden
	case ErrBadResponse:
		return e.StatusCode < 400
	}
	return false
}

// retryable reports whether a reply with this status may succeed if sent
// again.
func (e *StatusError) retryable() bool {
	return e.StatusCode == http.StatusTooManyRequests || e.StatusCode >= 500
}
