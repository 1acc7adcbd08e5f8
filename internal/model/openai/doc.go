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
// A tool with Strict set, or every tool when Config.Strict is on (the
// default), is sent with "strict": true after its parameter schema is
// converted to the provider's strict-mode rules: every object schema at any
// depth closes additionalProperties and lists all its properties as
// required, an optional property becoming nullable. Because the model then
// sends null for an optional field it would have left out, the client maps
// the arguments back before returning them: such nulls are dropped, so that
// guards see the shape of the original schema. A schema that cannot be
// converted (an unsupported keyword such as oneOf, open additionalProperties,
// an untyped property, a remote $ref) is sent non-strict, and the
// Response's StrictFallbacks (and the configured logger) say which tool and
// why. Sending a non-conforming schema as strict would make the provider
// reject the whole request; a weaker guarantee that is visible beats a
// failed turn. For the same reason, when a provider refuses a converted
// schema anyway (400 naming the tool in error.param or its message), the
// request is sent again at once with that tool non-strict, without using up
// a retry, and the client remembers the refusal for that tool and schema.
//
// # Streaming
//
// With Config.Stream the request asks for server-sent events with usage in
// the last chunk; content, refusal and tool-call deltas (assembled by index)
// are folded into exactly the Response the same reply gives unstreamed. A
// stream cut before its end is retried like a failed connection.
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
// A failed call is a *model.ProviderError, matched with errors.Is by its
// kind: 401/403 model.ErrAuth; 429 model.ErrRateLimited; an exhausted
// quota (error.code or error.type insufficient_quota, a 429 too)
// model.ErrQuota, never retried; a context-window refusal
// model.ErrContextLength; 5xx,
// 409, network failures and cut streams model.ErrUnavailable; 408 and
// timeouts model.ErrTimeout; other 4xx model.ErrBadRequest; a 2xx body that
// is not a chat completion (not JSON, no choices, a tool call without a
// function name) model.ErrMalformed. Errors carry the "model/openai: "
// prefix. The API key is sent only in the Authorization header; it is never
// logged and is redacted from provider error messages. A provider's message
// is quoted on one line, at most 300 characters; a body that is not an
// error object is described by its content type, size and a 120-character
// excerpt, an HTML page (a gateway's 502) by its title or visible text.
package openai
