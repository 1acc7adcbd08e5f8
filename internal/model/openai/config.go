package openai

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentwarden/warden/internal/model"
)

// Config configures a Client. New validates it once; every limit is explicit
// and Defaults returns the values Warden uses when the operator sets none.
type Config struct {
	// BaseURL is the API root, e.g. "https://api.openai.com/v1";
	// "/chat/completions" is appended.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>"; empty sends no
	// Authorization header (local servers). It is never logged.
	APIKey string
	// Model is the provider's model name, sent as "model".
	Model string

	// AttemptTimeout bounds one HTTP request, body included.
	AttemptTimeout time.Duration
	// CallTimeout bounds one Complete call: every attempt and every wait.
	CallTimeout time.Duration
	// MaxRetries is how many times a retryable failure is retried; 0 sends
	// each request once.
	MaxRetries int
	// InitialBackoff is the base wait before the first retry; it doubles per
	// retry up to MaxBackoff, and the actual wait is drawn from [d/2, d].
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// MaxResponseBytes caps the reply body read; a longer reply is malformed.
	MaxResponseBytes int64

	// MaxCompletionTokens sends Request.MaxTokens as "max_completion_tokens"
	// (OpenAI's current name, required by its reasoning models) instead of
	// "max_tokens" (understood by most compatible servers).
	MaxCompletionTokens bool

	// Stream asks for the reply as server-sent events ("stream": true, with
	// "stream_options": {"include_usage": true}) and assembles it into the
	// same Response a non-streamed reply gives. A server that answers a
	// streamed request with a plain JSON body is read as such.
	Stream bool
	// Strict sends every tool as if Tool.Strict were set: "strict": true
	// wherever its schema can be converted (TOOL_USE_RELIABILITY §2.1).
	// Turn it off for a server that refuses the field.
	Strict bool
	// ParallelToolCalls is sent as "parallel_tool_calls" when a request
	// leaves it unset and offers tools; nil sends nothing (the provider's
	// default).
	ParallelToolCalls *bool
	// ToolChoice is sent as "tool_choice" when a request leaves it unset and
	// offers tools: ToolChoiceDefault (send nothing), auto, none or
	// required.
	ToolChoice model.ToolChoiceMode

	// HTTPClient sends the requests; nil uses a new http.Client. Its own
	// Timeout, if any, applies on top of AttemptTimeout.
	HTTPClient *http.Client
	// Logger receives retries and strict fallbacks at WARN; nil logs nothing.
	Logger *slog.Logger
}

// Defaults returns a Config with Warden's default limits for the given
// endpoint: 60 s per attempt, 180 s per call, 3 retries backing off from 1 s
// (1 s, 2 s, 4 s, as TOOL_USE_RELIABILITY §3.1) up to 30 s, 8 MiB replies,
// strict tool schemas, no streaming.
func Defaults(baseURL, apiKey, model string) Config {
	return Config{
		BaseURL:          baseURL,
		APIKey:           apiKey,
		Model:            model,
		AttemptTimeout:   60 * time.Second,
		CallTimeout:      180 * time.Second,
		MaxRetries:       3,
		InitialBackoff:   time.Second,
		MaxBackoff:       30 * time.Second,
		MaxResponseBytes: 8 << 20,
		Strict:           true,
	}
}

// String describes c with the API key redacted, so that printing a Config
// never leaks it.
func (c Config) String() string {
	key := ""
	if c.APIKey != "" {
		key = "[redacted]"
	}
	parallel := "default"
	if c.ParallelToolCalls != nil {
		parallel = strconv.FormatBool(*c.ParallelToolCalls)
	}
	return fmt.Sprintf("openai.Config{BaseURL:%q APIKey:%q Model:%q AttemptTimeout:%s CallTimeout:%s MaxRetries:%d InitialBackoff:%s MaxBackoff:%s MaxResponseBytes:%d MaxCompletionTokens:%t Stream:%t Strict:%t ParallelToolCalls:%s ToolChoice:%q}",
		c.BaseURL, key, c.Model, c.AttemptTimeout, c.CallTimeout, c.MaxRetries, c.InitialBackoff, c.MaxBackoff, c.MaxResponseBytes, c.MaxCompletionTokens,
		c.Stream, c.Strict, parallel, c.ToolChoice)
}

// GoString is String, so that %#v redacts the key too.
func (c Config) GoString() string { return c.String() }

// LogValue is String, so that slog redacts the key too.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// validate checks c and returns the completions endpoint.
func (c Config) validate() (string, error) {
	u, err := url.Parse(c.BaseURL)
	switch {
	case c.BaseURL == "":
		return "", fmt.Errorf("model/openai: %w: base URL is empty", ErrConfig)
	case err != nil:
		return "", fmt.Errorf("model/openai: %w: base URL: %w", ErrConfig, err)
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return "", fmt.Errorf("model/openai: %w: base URL %q is not an http(s) URL with a host", ErrConfig, c.BaseURL)
	case u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("model/openai: %w: base URL %q has a query or fragment", ErrConfig, c.BaseURL)
	case strings.ContainsAny(c.APIKey, "\r\n"):
		return "", fmt.Errorf("model/openai: %w: API key contains a line break", ErrConfig)
	case c.Model == "":
		return "", fmt.Errorf("model/openai: %w: model is empty", ErrConfig)
	case c.AttemptTimeout <= 0:
		return "", fmt.Errorf("model/openai: %w: attempt timeout %s is not positive", ErrConfig, c.AttemptTimeout)
	case c.CallTimeout <= 0:
		return "", fmt.Errorf("model/openai: %w: call timeout %s is not positive", ErrConfig, c.CallTimeout)
	case c.MaxRetries < 0:
		return "", fmt.Errorf("model/openai: %w: max retries %d is negative", ErrConfig, c.MaxRetries)
	case c.MaxRetries > 0 && c.InitialBackoff <= 0:
		return "", fmt.Errorf("model/openai: %w: initial backoff %s is not positive", ErrConfig, c.InitialBackoff)
	case c.MaxRetries > 0 && c.MaxBackoff < c.InitialBackoff:
		return "", fmt.Errorf("model/openai: %w: max backoff %s is below initial backoff %s", ErrConfig, c.MaxBackoff, c.InitialBackoff)
	case c.MaxResponseBytes <= 0:
		return "", fmt.Errorf("model/openai: %w: max response bytes %d is not positive", ErrConfig, c.MaxResponseBytes)
	}
	switch c.ToolChoice {
	case model.ToolChoiceDefault, model.ToolChoiceAuto, model.ToolChoiceNone, model.ToolChoiceRequired:
	default:
		return "", fmt.Errorf("model/openai: %w: tool choice %q is not auto, none or required", ErrConfig, c.ToolChoice)
	}
	return strings.TrimRight(c.BaseURL, "/") + "/chat/completions", nil
}
