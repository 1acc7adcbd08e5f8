// Package openai is a [model.Model] for any OpenAI-compatible chat-completions
// endpoint (OpenAI, Azure-style gateways, vLLM, Ollama, DeepSeek, …).
//
// Complete sends one POST {BaseURL}/chat/completions with the conversation
// and the tool catalogue in the "tools"/"tool_calls" wire format, and returns
// the first choice's message. Tool-call argument text is returned verbatim,
// valid JSON or not.
//
// # Strict schemas
//
// A tool with Strict set is sent with "strict": true only when its parameter
// schema meets the provider's strict-mode rules (see [CheckStrictSchema]):
// every object closes additionalProperties and lists all its properties as
// required. Otherwise it is sent non-strict, and the Response's
// StrictFallbacks (and the configured logger) say which tool and why. Sending
// a non-conforming schema as strict would make the provider reject the whole
// request; a weaker guarantee that is visible beats a failed turn.
//
// # Retries and deadlines
//
// Each Complete has a deadline of Config.CallTimeout (or the caller's, if
// sooner) covering every attempt and wait; each HTTP attempt has its own
// Config.AttemptTimeout. 429, 5xx, network errors and attempt timeouts are
// retried up to Config.MaxRetries times with exponential backoff and jitter;
// a Retry-After (or retry-after-ms) header replaces the backoff when present.
// A wait that would overrun the deadline is not started: the last error is
// returned at once. 4xx other than 429 and malformed replies are not retried,
// because sending the same bytes again cannot change the answer.
//
// Errors wrap the sentinels of errors.go and carry the "model/openai: "
// prefix. The API key is sent only in the Authorization header; it is never
// logged and is redacted from provider error messages.
package openai
