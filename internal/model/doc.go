// Package model is the seam between Warden's agent loop and a language model.
//
// The loop depends only on [Model]: it sends a [Request] (the conversation so
// far and the tool catalogue) and gets back one assistant turn as a
// [Response]. Adapters live in sub-packages:
//
//   - model/openai talks to any OpenAI-compatible chat-completions endpoint,
//     with tool calling, strict schemas where the schema allows them, retries
//     and deadlines.
//   - model/scripted replays a fixed list of turns, for scenarios and tests.
//
// # Tool calls are raw
//
// A [ToolCall] carries the argument text exactly as the model produced it. It
// may be invalid JSON, name an unknown tool or miss required fields: judging it
// is the guards' job (TOOL_USE_RELIABILITY §2.2), so an adapter never parses,
// repairs or drops arguments. Keeping the text verbatim is also what makes a
// recorded run replayable byte for byte. The one exception is an adapter's
// own rewriting of a schema (a strict-mode conversion that turns optional
// fields into required nullable ones): it maps the model's arguments back to
// the shape of the schema the caller gave, so that guards judge arguments
// against the schema they know.
//
// # Conversation shape
//
// A conversation is a list of [Message] values with one of four roles:
//
//	system     instructions (the node prompt)
//	user       the user's words
//	assistant  the model's turn: text and/or tool calls, each with an id
//	tool       one observation, answering the tool call named by ToolCallID
//
// Every tool call of an assistant message is answered by exactly one tool
// message before any other message follows; [Request.Validate] checks the shape
// so that an adapter fails before spending a network round trip.
//
// # Errors
//
// Complete returns an error only when no assistant turn could be obtained
// (network, quota, authentication, a malformed reply, an exhausted script).
// What the model says, including nonsense tool calls, a refusal
// (Response.Refusal) or a turn cut at the token limit (FinishLength), is a
// Response.
//
// A failure at the provider is a [*ProviderError] whose Kind is one of
// [ErrAuth], [ErrRateLimited], [ErrQuota], [ErrContextLength], [ErrUnavailable],
// [ErrMalformed], [ErrBadRequest] or [ErrTimeout], matched with errors.Is
// through any wrapping, so that a caller (the CLI's exit code, the HTTP
// API's error code) can say what went wrong without parsing text.
package model
