package openai

import (
	"errors"
	"net/http"
	"strings"

	"github.com/agentwarden/warden/internal/model"
)

// ErrConfig is returned by New for a Config it cannot run with.
var ErrConfig = errors.New("invalid config")

// A failed call is a *model.ProviderError matched by the kinds of package
// model (model.ErrAuth, model.ErrRateLimited, …); classify is where a
// status and a body become a kind.

// classify returns the kind of a non-2xx reply with the provider's error
// code and message, and whether sending the same request again may
// succeed.
func classify(status int, code, typ, message string) (kind error, retry bool) {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return model.ErrAuth, false
	case quota(code, typ):
		// An exhausted quota is a 429 too, but waiting does not refill it.
		return model.ErrQuota, false
	case status == http.StatusTooManyRequests:
		return model.ErrRateLimited, true
	case contextLength(code, message) && status >= 400 && status < 500:
		return model.ErrContextLength, false
	case status == http.StatusRequestTimeout:
		return model.ErrTimeout, true
	case status == http.StatusConflict:
		// OpenAI answers 409 for a transient lock; its own SDKs retry it.
		return model.ErrUnavailable, true
	case status >= 500:
		return model.ErrUnavailable, true
	case status >= 400:
		return model.ErrBadRequest, false
	}
	return model.ErrMalformed, false
}

// classifyInBody returns the kind of an error object a server sent inside
// a 2xx body or an event stream instead of a completion.
func classifyInBody(code, typ, message string) (kind error, retry bool) {
	switch {
	case contextLength(code, message):
		return model.ErrContextLength, false
	case quota(code, typ):
		return model.ErrQuota, false
	case code == "rate_limit_exceeded" || typ == "rate_limit_exceeded":
		return model.ErrRateLimited, true
	case typ == "server_error" || code == "server_error" || typ == "overloaded_error":
		return model.ErrUnavailable, true
	}
	return model.ErrMalformed, false
}

// contextLength recognises a context-window refusal: OpenAI's code, or the
// wording of compatible servers (vLLM, llama.cpp, DeepSeek) that send none.
func contextLength(code, message string) bool {
	if code == "context_length_exceeded" {
		return true
	}
	m := strings.ToLower(message)
	for _, s := range []string{"context_length_exceeded", "maximum context length", "context window", "context length"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// quota recognises an exhausted quota or credit: OpenAI's error.code and
// error.type "insufficient_quota".
func quota(code, typ string) bool {
	return code == "insufficient_quota" || typ == "insufficient_quota"
}
