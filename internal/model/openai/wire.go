package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentwarden/warden/internal/model"
)

// The chat-completions request body. Field order is the order on the wire.
type wireRequest struct {
	Model               string          `json:"model"`
	Messages            []wireMessage   `json:"messages"`
	Tools               []wireTool      `json:"tools,omitempty"`
	ToolChoice          json.RawMessage `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	MaxTokens           *int            `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int            `json:"max_completion_tokens,omitempty"`
	Stream              bool            `json:"stream,omitempty"`
	StreamOptions       *streamOptions  `json:"stream_options,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type wireMessage struct {
	Role string `json:"role"`
	// Content is null for an assistant message that only calls tools.
	Content    *string        `json:"content"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireTool struct {
	Type     string          `json:"type"`
	Function wireFunctionDef `json:"function"`
}

type wireFunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      bool            `json:"strict,omitempty"`
}

// encoded is a request body and what answering it needs: the strict tools
// sent non-strict, the mapping back of each strict tool's arguments, and
// which tools (by index) were sent strict.
type encoded struct {
	body      []byte
	fallbacks []model.StrictFallback
	restore   map[string]*restorer
	strict    []bool
}

// encodeRequest builds the request body. req must be valid. refused says
// why the provider refused a tool's strict schema before, "" if it did not:
// such a tool is sent non-strict.
func encodeRequest(c *Config, req model.Request, refused func(model.Tool) string) (encoded, error) {
	w := wireRequest{
		Model:             c.Model,
		Messages:          make([]wireMessage, len(req.Messages)),
		ParallelToolCalls: req.ParallelToolCalls,
		Temperature:       req.Temperature,
	}
	if c.MaxCompletionTokens {
		w.MaxCompletionTokens = req.MaxTokens
	} else {
		w.MaxTokens = req.MaxTokens
	}
	if c.Stream {
		w.Stream, w.StreamOptions = true, &streamOptions{IncludeUsage: true}
	}
	for i, m := range req.Messages {
		content := m.Content
		wm := wireMessage{Role: string(m.Role), Content: &content, ToolCallID: m.ToolCallID}
		if m.Role == model.RoleAssistant && len(m.ToolCalls) > 0 && m.Content == "" {
			wm.Content = nil
		}
		for _, tc := range m.ToolCalls {
			wm.ToolCalls = append(wm.ToolCalls, wireToolCall{
				ID: tc.ID, Type: "function",
				Function: wireFunction{Name: tc.Name, Arguments: tc.Arguments},
			})
		}
		w.Messages[i] = wm
	}
	e := encoded{strict: make([]bool, len(req.Tools))}
	for i, t := range req.Tools {
		def := wireFunctionDef{Name: t.Name, Description: t.Description, Parameters: t.Parameters}
		if t.Strict || c.Strict {
			params, r, err := strictTool(t.Parameters)
			if reason := refused(t); err == nil && reason != "" {
				err = errors.New(reason)
			}
			if err != nil {
				e.fallbacks = append(e.fallbacks, model.StrictFallback{Tool: t.Name, Reason: err.Error()})
			} else {
				def.Parameters, def.Strict, e.strict[i] = params, true, true
				if r != nil {
					if e.restore == nil {
						e.restore = map[string]*restorer{}
					}
					e.restore[t.Name] = r
				}
			}
		}
		w.Tools = append(w.Tools, wireTool{Type: "function", Function: def})
	}
	choice := req.ToolChoice
	if len(req.Tools) > 0 {
		if choice.Mode == model.ToolChoiceDefault {
			choice.Mode = c.ToolChoice
		}
		if w.ParallelToolCalls == nil {
			w.ParallelToolCalls = c.ParallelToolCalls
		}
	}
	switch choice.Mode {
	case model.ToolChoiceDefault:
	case model.ToolChoiceFunction:
		b, err := json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": choice.Name}})
		if err != nil {
			return encoded{}, err
		}
		w.ToolChoice = b
	default:
		w.ToolChoice = json.RawMessage(strconv.Quote(string(choice.Mode)))
	}
	body, err := json.Marshal(w)
	if err != nil {
		return encoded{}, fmt.Errorf("encode request: %w", err)
	}
	e.body = body
	return e, nil
}

// The chat-completions reply. Fields a provider may shape differently are
// kept raw and decoded by hand.
type wireResponse struct {
	Choices []struct {
		Message struct {
			Content   json.RawMessage     `json:"content"`
			Refusal   *string             `json:"refusal"`
			ToolCalls []wireReplyToolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage `json:"usage"`
	Error *wireError `json:"error"`
}

type wireReplyToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type wireUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func (u *wireUsage) usage() model.Usage {
	if u == nil {
		return model.Usage{}
	}
	out := model.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if u.PromptTokensDetails != nil {
		out.CachedTokens = u.PromptTokensDetails.CachedTokens
	}
	return out
}

type wireError struct {
	Message string          `json:"message"`
	Param   *string         `json:"param"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// code is error.code as text: OpenAI sends a string, some servers a number.
func (e *wireError) code() string {
	var code string
	if json.Unmarshal(e.Code, &code) == nil {
		return code
	}
	if c := strings.TrimSpace(string(e.Code)); c != "null" {
		return c
	}
	return ""
}

// malformed is the error of a 2xx reply that is not a chat completion.
func malformed(format string, a ...any) *model.ProviderError {
	return &model.ProviderError{Kind: model.ErrMalformed, Status: http.StatusOK, Message: fmt.Sprintf(format, a...)}
}

// decodeResponse parses a 2xx body into the first choice's turn. A body
// that is not a chat completion is a malformed reply, or the provider's
// error when it sent one instead.
func decodeResponse(body []byte, contentType, apiKey string) (model.Response, *model.ProviderError, bool) {
	var w wireResponse
	if err := json.Unmarshal(body, &w); err != nil {
		return model.Response{}, malformed("the body is not a chat completion (%s): %s", strings.TrimPrefix(err.Error(), "json: "), describe(body, contentType, apiKey)), false
	}
	if len(w.Choices) == 0 {
		if w.Error != nil {
			pe, retry := inBodyError(w.Error, apiKey)
			return model.Response{}, pe, retry
		}
		return model.Response{}, malformed("the reply has no choices"), false
	}
	ch := w.Choices[0]
	text, err := contentText(ch.Message.Content)
	if err != nil {
		return model.Response{}, malformed("%v", err), false
	}
	out := model.Response{
		Message: model.Message{Role: model.RoleAssistant, Content: text},
		Usage:   w.Usage.usage(),
	}
	if ch.FinishReason != nil {
		out.FinishReason = model.FinishReason(*ch.FinishReason)
	}
	if ch.Message.Refusal != nil {
		out.Refusal = *ch.Message.Refusal
	}
	for i, tc := range ch.Message.ToolCalls {
		call, err := toolCall(i, tc.ID, tc.Type, tc.Function.Name, argumentText(tc.Function.Arguments))
		if err != nil {
			return model.Response{}, err, false
		}
		out.Message.ToolCalls = append(out.Message.ToolCalls, call)
	}
	return out, nil, false
}

// toolCall checks the frame of the i-th tool call of a reply; its argument
// text is the model's and is not judged here.
func toolCall(i int, id, typ, name, args string) (model.ToolCall, *model.ProviderError) {
	if typ != "" && typ != "function" {
		return model.ToolCall{}, malformed("tool call %d has type %q", i, typ)
	}
	if name == "" {
		return model.ToolCall{}, malformed("tool call %d has no function name", i)
	}
	if id == "" {
		// Some compatible servers omit ids; the loop needs one to pair
		// the observation, and a stable one keeps runs replayable.
		id = "call_" + strconv.Itoa(i)
	}
	return model.ToolCall{ID: id, Name: name, Arguments: args}, nil
}

// inBodyError is the error object a server sent instead of a completion.
func inBodyError(e *wireError, apiKey string) (*model.ProviderError, bool) {
	code := e.code()
	kind, retry := classifyInBody(code, e.Type, e.Message)
	return &model.ProviderError{Kind: kind, Type: e.Type, Code: code, Message: message(e.Message, apiKey)}, retry
}

// contentText reads message content: a string, null, or (some servers) an
// array of {"type":"text","text":…} parts.
func contentText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("message content is neither text nor parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

// argumentText returns the argument text as the model produced it: the
// string's value when the server sent a JSON string (the standard), the raw
// JSON when a server sent an object instead, "" when absent or null.
func argumentText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s
	}
	return string(raw)
}

// decodeError builds the error of a non-2xx reply, and says whether the
// same request may succeed if sent again. The provider's error object is
// read where OpenAI puts it ({"error":{…}}), as a bare string
// ({"error":"…"}), or at the top level as Mistral-style servers send it
// ({"object":"error","message":…,"type":…,"code":…}); any other body is
// described by its content type, size and an excerpt.
func decodeError(status int, body []byte, contentType, apiKey string) (*model.ProviderError, bool) {
	e := &model.ProviderError{Status: status}
	var w struct {
		Error  json.RawMessage `json:"error"`
		Object string          `json:"object"`
		wireError
	}
	var obj wireError
	var text string
	switch {
	case json.Unmarshal(body, &w) != nil:
		e.Message = describe(body, contentType, apiKey)
	case json.Unmarshal(w.Error, &obj) == nil && (obj.Message != "" || obj.Type != "" || len(obj.Code) > 0):
		e.Message, e.Type, e.Code = message(obj.Message, apiKey), obj.Type, obj.code()
		if obj.Param != nil {
			e.Param = *obj.Param
		}
	case json.Unmarshal(w.Error, &text) == nil && text != "":
		e.Message = message(text, apiKey)
	case w.Message != "" && (w.Object == "error" || w.Type != "" || len(w.Code) > 0):
		e.Message, e.Type, e.Code = message(w.Message, apiKey), w.Type, w.code()
		if w.Param != nil {
			e.Param = *w.Param
		}
	default:
		e.Message = describe(body, contentType, apiKey)
	}
	var retry bool
	e.Kind, retry = classify(status, e.Code, e.Type, e.Message)
	return e, retry
}

// redact removes the API key from text meant for errors and logs.
func redact(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, "[redacted]")
}
