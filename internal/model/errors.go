package model

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// ErrInvalidRequest is returned for a Request whose shape no model could
// answer: no messages, an unknown role, a tool message without a call id, a
// tool without a name or with a parameter schema that is not JSON.
var ErrInvalidRequest = errors.New("model: invalid request")

// The kinds of provider failure. A *ProviderError matches exactly one of
// them with errors.Is; callers branch on the kind, never on the text.
var (
	// ErrAuth: the provider refused the API key (HTTP 401 or 403). It is
	// the provider's authentication, not the caller's.
	ErrAuth = errors.New("model: provider authentication failed")
	// ErrRateLimited: the provider throttled the call (HTTP 429);
	// ProviderError.RetryAfter says how long it asked to wait.
	ErrRateLimited = errors.New("model: provider rate limited")
	// ErrQuota: the provider's account has no quota or credit left
	// (OpenAI's 429 insufficient_quota). Waiting does not refill it: the
	// operator must, so it is never retried.
	ErrQuota = errors.New("model: provider quota exhausted")
	// ErrContextLength: the conversation does not fit the model's context
	// window. Sending it again cannot help; it must be shortened.
	ErrContextLength = errors.New("model: context length exceeded")
	// ErrUnavailable: the provider could not be reached or failed (HTTP 5xx,
	// connection refused or reset, a stream cut short).
	ErrUnavailable = errors.New("model: provider unavailable")
	// ErrMalformed: the provider answered with something that is not a
	// chat completion (not JSON, no choices, a broken stream).
	ErrMalformed = errors.New("model: malformed provider response")
	// ErrBadRequest: the provider refused the request as sent (another 4xx):
	// a configuration or adapter problem, not worth sending again.
	ErrBadRequest = errors.New("model: provider rejected the request")
	// ErrTimeout: an attempt or the whole call ran out of time.
	ErrTimeout = errors.New("model: provider timed out")
)

// ProviderError is a model call that failed at or on the way to the
// provider. errors.Is matches it against its Kind; errors.As finds it
// through any wrapping. Its text never carries the API key.
type ProviderError struct {
	// Kind is one of ErrAuth, ErrRateLimited, ErrQuota, ErrContextLength,
	// ErrUnavailable, ErrMalformed, ErrBadRequest or ErrTimeout.
	Kind error
	// Status is the HTTP status of the reply; 0 when there was none
	// (network failure, timeout, malformed 2xx body).
	Status int
	// Type, Code and Param are the provider's error.type, error.code and
	// error.param (the request field it objects to), if any.
	Type  string
	Code  string
	Param string
	// Message is the provider's error.message, or a description of the
	// failure when the provider gave none (API key redacted).
	Message string
	// RetryAfter is the wait the provider asked for; zero when none.
	RetryAfter time.Duration
	// Attempts is how many requests were sent before giving up; 0 when
	// unknown.
	Attempts int
	// Err is the underlying cause (a transport error), if any.
	Err error
}

// Error reads "model: provider rate limited: HTTP 429 (rate_limit_exceeded):
// Rate limit reached", with the parts that are known.
func (e *ProviderError) Error() string {
	var b strings.Builder
	if e.Kind != nil {
		b.WriteString(e.Kind.Error())
	} else {
		b.WriteString("model: provider failed")
	}
	if e.Status != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
		if t := http.StatusText(e.Status); t != "" && e.Code == "" {
			b.WriteString(" " + t)
		}
	}
	if e.Code != "" {
		if e.Status == 0 {
			b.WriteString(":")
		}
		b.WriteString(" (" + e.Code + ")")
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	return b.String()
}

// Is matches e against its kind.
func (e *ProviderError) Is(target error) bool { return e.Kind != nil && target == e.Kind }

// Unwrap returns the underlying cause.
func (e *ProviderError) Unwrap() error { return e.Err }

// KindName is a short stable name of a provider failure's kind, for error
// codes and metric labels: "auth", "rate_limited", "quota", "context_length",
// "unavailable", "malformed", "bad_request", "timeout"; "" when err is no
// provider failure.
func KindName(err error) string {
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return ""
}

var kinds = []struct {
	err  error
	name string
}{
	{ErrAuth, "auth"},
	{ErrRateLimited, "rate_limited"},
	{ErrQuota, "quota"},
	{ErrContextLength, "context_length"},
	{ErrUnavailable, "unavailable"},
	{ErrMalformed, "malformed"},
	{ErrBadRequest, "bad_request"},
	{ErrTimeout, "timeout"},
}
