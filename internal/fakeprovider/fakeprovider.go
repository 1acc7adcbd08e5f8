// Package fakeprovider is an OpenAI-compatible chat-completions server for
// tests, answering like a real one: completions with text, parallel tool
// calls, refusals, truncation and usage, as one JSON body or, when the
// request asks for "stream": true, as server-sent events in the chunking a
// real provider uses; and failures as real providers send them (429 with
// Retry-After, 5xx, context length, 401, an exhausted quota, a CDN's HTML
// 502 page, garbage), and, when asked, the message-order rule of providers
// that refuse a conversation ending with the assistant's message.
//
// A Server plays a script of Replies, one per request; the last repeats.
// The same Reply renders as JSON or as a stream, so a test can check that
// both give one model.Response.
package fakeprovider

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// Call is one tool call of a completion.
type Call struct {
	ID, Name, Arguments string
}

// Usage is the token count a completion reports.
type Usage struct {
	Prompt, Completion, Cached int
}

// Reply is one scripted answer. With Status zero (or 200) and Body empty
// it is a completion built from Content, Refusal, Calls, Finish and Usage;
// otherwise Status, Header and Body are sent as they are.
type Reply struct {
	// Content is sent as null when it is empty and there are calls or a
	// refusal, as OpenAI does.
	Content string
	Refusal string
	Calls   []Call
	// Finish is the finish_reason; empty means "tool_calls" with calls,
	// else "stop".
	Finish string
	Usage  *Usage

	Status int
	Header map[string]string
	Body   string
	// ContentType of a raw Body; default application/json.
	ContentType string

	// Delay holds the answer back, cut short when the client gives up.
	Delay time.Duration
	// CutAfter, when streaming, ends the stream after this many events,
	// without finish_reason or [DONE], as a dropped connection does.
	CutAfter int
}

// Request is one request as the server saw it.
type Request struct {
	Method, Path string
	Header       http.Header
	Body         string
	// Stream: the body asked for "stream": true.
	Stream bool
}

// Server is a fake provider. BaseURL is what a client is configured with.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	replies  []Reply
	played   int
	received []Request
	// userOrToolLast: a request whose last message is the assistant's is
	// refused (RequireUserOrToolLast).
	userOrToolLast bool
}

// RequireUserOrToolLast makes s answer as providers that take a
// conversation only when its last message is the user's or a tool's
// (Mistral): a request ending with an assistant message is refused with
// MessageOrder's 400, and plays no scripted reply.
func (s *Server) RequireUserOrToolLast() {
	s.mu.Lock()
	s.userOrToolLast = true
	s.mu.Unlock()
}

// New starts a server playing replies (at least one) and closes it when
// the test ends.
func New(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	if len(replies) == 0 {
		t.Fatal("fakeprovider: no replies")
	}
	s := &Server{replies: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// BaseURL is the API root: the server's URL and "/v1".
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.received...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var head struct {
		Stream   bool `json:"stream"`
		Messages []struct {
			Role   string `json:"role"`
			Prefix bool   `json:"prefix"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &head)
	s.mu.Lock()
	var rep Reply
	if last := len(head.Messages) - 1; s.userOrToolLast && last >= 0 && head.Messages[last].Role == "assistant" && !head.Messages[last].Prefix {
		rep = MessageOrder()
	} else {
		rep = s.replies[min(s.played, len(s.replies)-1)]
		s.played++
	}
	s.received = append(s.received, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: string(body), Stream: head.Stream})
	s.mu.Unlock()
	if rep.Delay > 0 {
		select {
		case <-time.After(rep.Delay):
		case <-r.Context().Done():
			return
		}
	}
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		rep = Reply{Status: http.StatusNotFound, Body: errorBody("Unknown request URL: "+r.Method+" "+r.URL.Path, "invalid_request_error", "unknown_url")}
	}
	if rep.Body != "" || (rep.Status != 0 && rep.Status != http.StatusOK) {
		ct := rep.ContentType
		if ct == "" {
			ct = "application/json"
		}
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(max(rep.Status, http.StatusOK))
		io.WriteString(w, rep.Body)
		return
	}
	if head.Stream {
		s.stream(w, rep)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	b, _ := json.Marshal(completion(rep))
	w.Write(b)
}

const created = 1767225600

func finish(rep Reply) string {
	switch {
	case rep.Finish != "":
		return rep.Finish
	case len(rep.Calls) > 0:
		return "tool_calls"
	}
	return "stop"
}

func usage(u *Usage) map[string]any {
	if u == nil {
		return nil
	}
	return map[string]any{
		"prompt_tokens": u.Prompt, "completion_tokens": u.Completion, "total_tokens": u.Prompt + u.Completion,
		"prompt_tokens_details":     map[string]any{"cached_tokens": u.Cached, "audio_tokens": 0},
		"completion_tokens_details": map[string]any{"reasoning_tokens": 0},
	}
}

func completion(rep Reply) map[string]any {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if rep.Content != "" || len(rep.Calls) == 0 && rep.Refusal == "" {
		msg["content"] = rep.Content
	}
	if rep.Refusal != "" {
		msg["refusal"] = rep.Refusal
	}
	if len(rep.Calls) > 0 {
		calls := make([]map[string]any, len(rep.Calls))
		for i, c := range rep.Calls {
			calls[i] = map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}}
		}
		msg["tool_calls"] = calls
	}
	out := map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "created": created, "model": "fake-model",
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish(rep)}},
	}
	if u := usage(rep.Usage); u != nil {
		out["usage"] = u
	}
	return out
}

// stream writes rep as OpenAI streams it: a role chunk, content or refusal
// in small pieces, each tool call's id and name then its arguments in
// pieces, a finish chunk, a usage chunk with no choices, and [DONE].
func (s *Server) stream(w http.ResponseWriter, rep Reply) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	events := 0
	send := func(v any) bool {
		if rep.CutAfter > 0 && events >= rep.CutAfter {
			return false
		}
		events++
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": created, "model": "fake-model",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		}
	}
	if !send(chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil)) {
		return
	}
	for _, p := range pieces(rep.Content, 4) {
		if !send(chunk(map[string]any{"content": p}, nil)) {
			return
		}
	}
	for _, p := range pieces(rep.Refusal, 4) {
		if !send(chunk(map[string]any{"refusal": p}, nil)) {
			return
		}
	}
	for i, c := range rep.Calls {
		first := map[string]any{"index": i, "id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": ""}}
		if !send(chunk(map[string]any{"tool_calls": []any{first}}, nil)) {
			return
		}
		for _, p := range pieces(c.Arguments, 5) {
			d := map[string]any{"index": i, "function": map[string]any{"arguments": p}}
			if !send(chunk(map[string]any{"tool_calls": []any{d}}, nil)) {
				return
			}
		}
	}
	if !send(chunk(map[string]any{}, finish(rep))) {
		return
	}
	if u := usage(rep.Usage); u != nil {
		if !send(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": created, "model": "fake-model",
			"choices": []any{}, "usage": u}) {
			return
		}
	}
	if rep.CutAfter > 0 && events >= rep.CutAfter {
		return
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

// pieces splits s into pieces of n runes, as a provider streams tokens.
func pieces(s string, n int) []string {
	var out []string
	for s != "" {
		i, k := 0, 0
		for i < len(s) && k < n {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			k++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// errorBody is an OpenAI error object.
func errorBody(message, typ, code string) string {
	c := "null"
	if code != "" {
		c = strconv.Quote(code)
	}
	b, _ := json.Marshal(message)
	return fmt.Sprintf(`{"error":{"message":%s,"type":%q,"param":null,"code":%s}}`, b, typ, c)
}

// Error is a failure reply with an OpenAI error object.
func Error(status int, message, typ, code string) Reply {
	return Reply{Status: status, Body: errorBody(message, typ, code)}
}

// RateLimited is a 429 asking to wait retryAfter (as Retry-After seconds
// and retry-after-ms, as OpenAI sends both).
func RateLimited(retryAfter time.Duration) Reply {
	r := Error(http.StatusTooManyRequests, "Rate limit reached for requests. Please try again in "+retryAfter.String()+".", "requests", "rate_limit_exceeded")
	r.Header = map[string]string{
		"Retry-After":    strconv.Itoa(int(max(retryAfter.Round(time.Second), time.Second) / time.Second)),
		"Retry-After-Ms": strconv.FormatInt(retryAfter.Milliseconds(), 10),
	}
	return r
}

// InsufficientQuota is OpenAI's 429 for an account without quota or
// credit left: the status of a rate limit, but error.type and error.code
// "insufficient_quota", and no Retry-After.
func InsufficientQuota() Reply {
	return Error(http.StatusTooManyRequests, "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
		"insufficient_quota", "insufficient_quota")
}

// BadGatewayPage is a 502 as a CDN in front of a provider sends it: a
// whole HTML page, with styles, a script and the real error buried in it.
func BadGatewayPage() Reply {
	return Reply{Status: http.StatusBadGateway, ContentType: "text/html; charset=UTF-8", Body: badGatewayPage}
}

const badGatewayPage = `<!DOCTYPE html>
<!--[if lt IE 7]> <html class="no-js ie6 oldie" lang="en-US"> <![endif]-->
<html lang="en-US">
<head>
<title>api.example.com | 502: Bad gateway</title>
<meta charset="UTF-8" />
<meta http-equiv="Content-Type" content="text/html; charset=UTF-8" />
<style>body{margin:0;padding:0}#cf-wrapper{font-family:-apple-system,system-ui,BlinkMacSystemFont,"Segoe UI",Roboto;font-size:15px;line-height:1.5}.cf-error-details{background:#fff;border:1px solid #ebebeb}</style>
<script>(function(){var a=document.getElementById('cf-footer-ip');if(a){a.addEventListener('click',function(){a.classList.remove('hidden')})}})();</script>
</head>
<body>
<div id="cf-wrapper">
  <div id="cf-error-details" class="cf-error-details-wrapper">
    <h1><span class="cf-error-type">Bad gateway</span> <span class="code-label">Error code 502</span></h1>
    <p>The web server reported a bad gateway error.</p>
    <p>Please try again in a few minutes.</p>
    <p>Ray ID: <strong>8f1c2a3b4d5e6f70</strong> &bull; 2026-03-01 09:00:00 UTC</p>
  </div>
</div>
</body>
</html>
`

// MessageOrder is the 400 of a provider that requires the last message of
// a conversation to be the user's or a tool's (Mistral's
// invalid_request_message_order), in its own error shape: the fields at
// the top level, no "error" wrapper.
func MessageOrder() Reply {
	return Reply{Status: http.StatusBadRequest, Body: `{"object":"error","message":"Expected last role User or Tool (or Assistant with prefix True) for serving but got assistant","type":"invalid_request_message_order","param":null,"code":"3230"}`}
}

// ContextLength is OpenAI's 400 for a conversation longer than the
// model's context window.
func ContextLength() Reply {
	return Error(http.StatusBadRequest, "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.",
		"invalid_request_error", "context_length_exceeded")
}

// Unauthorized is OpenAI's 401 for a wrong key; it quotes the key's end,
// as OpenAI does.
func Unauthorized(key string) Reply {
	if len(key) > 4 {
		key = "sk-..." + key[len(key)-4:]
	}
	return Error(http.StatusUnauthorized, "Incorrect API key provided: "+key+". You can find your API key at https://platform.openai.com/account/api-keys.",
		"invalid_request_error", "invalid_api_key")
}

// Unavailable is a 503 from an overloaded provider.
func Unavailable() Reply {
	return Error(http.StatusServiceUnavailable, "The server is overloaded or not ready yet.", "server_error", "")
}

// Garbage is a 200 whose body is not JSON, as a misrouted proxy sends.
func Garbage() Reply {
	return Reply{Status: http.StatusOK, Body: "<html><body>502 Bad Gateway</body></html>", ContentType: "text/html"}
}

// Text is a completion with text only.
func Text(s string) Reply {
	return Reply{Content: s, Usage: &Usage{Prompt: 20, Completion: 5}}
}

// JSON renders rep as the non-streamed body it would be sent as, for a
// test that checks the wire format.
func JSON(rep Reply) string {
	b, _ := json.Marshal(completion(rep))
	return string(b)
}
