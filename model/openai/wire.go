package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentwarden/warden/model"
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

// encodeRequest builds the request body and lists the strict tools sent
// non-strict. req must be valid.
func encodeRequest(c *Config, req model.Request) ([]byte, []model.StrictFallback, error) {
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
	var fallbacks []model.StrictFallback
	for _, t := range req.Tools {
		def := wireFunctionDef{Name: t.Name, Description: t.Description, Parameters: t.Parameters}
		if t.Strict {
			if err := CheckStrictSchema(t.Parameters); err != nil {
				fallbacks = append(fallbacks, model.StrictFallback{Tool: t.Name, Reason: err.Error()})
			} else {
				def.Strict = true
			}
		}
		w.Tools = append(w.Tools, wireTool{Type: "function", Function: def})
	}
	switch req.ToolChoice.Mode {
	case model.ToolChoiceDefault:
	case model.ToolChoiceFunction:
		b, err := json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": req.ToolChoice.Name}})
		if err != nil {
			return nil, nil, err
		}
		w.ToolChoice = b
	default:
		w.ToolChoice = json.RawMessage(strconv.Quote(string(req.ToolChoice.Mode)))
	}
	body, err := json.Marshal(w)
	if err != nil {
		return nil, nil, fmt.Errorf("encode request: %w", err)
	}
	return body, fallbacks, nil
}

// The chat-completions reply. Fields a provider may shape differently are
// kept raw and decoded by hand.
type wireResponse struct {
	Choices []struct {
		Message struct {
			Content   json.RawMessage `json:"content"`
			Refusal   *string         `json:"refusal"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *model.Usage `json:"usage"`
	Error *wireError   `json:"error"`
}

type wireError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// decodeResponse parses a 2xx body into the first choice's turn.
func decodeResponse(body []byte) (model.Response, error) {
	var w wireResponse
	if err := json.Unmarshal(body, &w); err != nil {
		return model.Response{}, fmt.Errorf("%w: %w", ErrBadResponse, err)
	}
	if len(w.Choices) == 0 {
		if w.Error != nil {
			return model.Response{}, fmt.Errorf("%w: no choices, error %q", ErrBadResponse, w.Error.Message)
		}
		return model.Response{}, fmt.Errorf("%w: no choices", ErrBadResponse)
	}
	ch := w.Choices[0]
	text, err := contentText(ch.Message.Content)
	if err != nil {
		return model.Response{}, err
	}
	out := model.Response{
		Message:      model.Message{Role: model.RoleAssistant, Content: text},
		FinishReason: model.FinishReason(ch.FinishReason),
	}
	if ch.Message.Refusal != nil {
		out.Refusal = *ch.Message.Refusal
	}
	if w.Usage != nil {
		out.Usage = *w.Usage
	}
	for i, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			return model.Response{}, fmt.Errorf("%w: tool call %d has type %q", ErrBadResponse, i, tc.Type)
		}
		id := tc.ID
		if id == "" {
			// Some compatible servers omit ids; the loop needs one to pair
			// the observation, and a stable one keeps runs replayable.
			id = "call_" + strconv.Itoa(i)
		}
		out.Message.ToolCalls = append(out.Message.ToolCalls, model.ToolCall{
			ID: id, Name: tc.Function.Name, Arguments: argumentText(tc.Function.Arguments),
		})
	}
	return out, nil
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
		return "", fmt.Errorf("%w: message content is neither text nor parts", ErrBadResponse)
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

// decodeError builds the StatusError of a non-2xx reply.
func decodeError(status int, body []byte, apiKey string) *StatusError {
	e := &StatusError{StatusCode: status}
	var w struct {
		Error *wireError `json:"error"`
	}
	if json.Unmarshal(body, &w) == nil && w.Error != nil {
		e.Message, e.Type = w.Error.Message, w.Error.Type
		var code string
		if json.Unmarshal(w.Error.Code, &code) == nil {
			e.Code = code
		} else if c := strings.TrimSpace(string(w.Error.Code)); c != "" && c != "null" {
			e.Code = c
		}
	} else {
		e.Message = strings.TrimSpace(string(body))
		if len(e.Message) > 200 {
			e.Message = strings.ToValidUTF8(e.Message[:200], "") + "…"
		}
	}
	e.Message = redact(e.Message, apiKey)
	return e
}

// redact removes the API key from text meant for errors and logs.
func redact(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, "[redacted]")
}
