package model

import (
	"context"
	"encoding/json"
	"fmt"
)

// Model produces the next assistant turn of a conversation.
//
// Implementations are safe for concurrent use. Complete honours ctx: when it
// is cancelled or its deadline passes, Complete returns promptly with an
// error that wraps ctx.Err().
type Model interface {
	Complete(ctx context.Context, req Request) (Response, error)
}

// Role is who speaks a Message.
type Role string

// The four roles of a conversation.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of a conversation.
type Message struct {
	Role Role `json:"role"`
	// Content is the text of the message; for a tool message, the observation
	// the model reads.
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message makes, in the model's order.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID names the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// ToolCall is one tool invocation requested by the model.
type ToolCall struct {
	// ID pairs the call with the tool message that answers it.
	ID string `json:"id"`
	// Name is the tool name as the model wrote it; it may name no known tool.
	Name string `json:"name"`
	// Arguments is the argument text exactly as the model produced it. It is
	// usually a JSON object but may be anything, including invalid JSON.
	Arguments string `json:"arguments"`
}

// Tool is one entry of the tool catalogue offered to the model.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema of the arguments object; empty means the
	// tool takes no arguments.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// Strict asks the provider to constrain generation to Parameters
	// (TOOL_USE_RELIABILITY §2.1). An adapter that cannot honour it for this
	// schema sends the tool non-strict and reports a StrictFallback.
	Strict bool `json:"strict,omitempty"`
}

// ToolChoiceMode says whether and which tools the model may call.
type ToolChoiceMode string

// The tool choice modes. The zero value leaves the choice to the provider.
const (
	ToolChoiceDefault  ToolChoiceMode = ""
	ToolChoiceAuto     ToolChoiceMode = "auto"     // text or tool calls, as the model decides
	ToolChoiceNone     ToolChoiceMode = "none"     // text only
	ToolChoiceRequired ToolChoiceMode = "required" // at least one tool call
	ToolChoiceFunction ToolChoiceMode = "function" // a call to ToolChoice.Name
)

// ToolChoice constrains tool use for one turn. The zero value is
// ToolChoiceDefault.
type ToolChoice struct {
	Mode ToolChoiceMode `json:"mode,omitempty"`
	// Name is the tool to call when Mode is ToolChoiceFunction.
	Name string `json:"name,omitempty"`
}

// Request is one turn's input.
type Request struct {
	Messages   []Message  `json:"messages"`
	Tools      []Tool     `json:"tools,omitempty"`
	ToolChoice ToolChoice `json:"tool_choice,omitzero"`
	// Temperature is the sampling temperature; nil leaves the provider's.
	Temperature *float64 `json:"temperature,omitempty"`
	// MaxTokens caps the tokens generated for this turn; nil leaves the
	// provider's limit.
	MaxTokens *int `json:"max_tokens,omitempty"`
	// ParallelToolCalls allows (true) or forbids (false) several tool calls in
	// one turn; nil leaves the provider's default. Some providers guarantee
	// strict schemas only with parallel calls off.
	ParallelToolCalls *bool `json:"parallel_tool_calls,omitempty"`
}

// FinishReason is why the model stopped generating, as the provider said it.
type FinishReason string

// Finish reasons shared by OpenAI-compatible providers. Others pass through
// unchanged.
const (
	FinishStop          FinishReason = "stop"
	FinishToolCalls     FinishReason = "tool_calls"
	FinishLength        FinishReason = "length"
	FinishContentFilter FinishReason = "content_filter"
)

// Usage counts the tokens of one turn, when the provider reports them.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// CachedTokens is the part of PromptTokens the provider served from its
	// prompt cache (prompt_tokens_details.cached_tokens); zero when unknown.
	CachedTokens int `json:"cached_tokens"`
}

// StrictFallback records a tool that was asked to be strict but was sent
// non-strict, and why.
type StrictFallback struct {
	Tool   string `json:"tool"`
	Reason string `json:"reason"`
}

// Response is one assistant turn.
type Response struct {
	// Message has RoleAssistant and carries the text and/or tool calls.
	Message      Message      `json:"message"`
	FinishReason FinishReason `json:"finish_reason,omitempty"`
	// Refusal is the provider's refusal text, when it declined to answer.
	Refusal string `json:"refusal,omitempty"`
	Usage   Usage  `json:"usage"`
	// StrictFallbacks lists the tools sent non-strict although Tool.Strict
	// was set, so that the caller can see and log the weaker guarantee.
	StrictFallbacks []StrictFallback `json:"strict_fallbacks,omitempty"`
}

// Validate reports whether r has a shape every model can answer. It checks
// roles, that each tool message answers a call of the assistant message
// before it and that every call is answered before the conversation moves
// on, that tools have distinct names and JSON parameter schemas, and that the
// tool choice names an offered tool. The error wraps ErrInvalidRequest.
func (r Request) Validate() error {
	if len(r.Messages) == 0 {
		return fmt.Errorf("%w: no messages", ErrInvalidRequest)
	}
	pending := map[string]bool{} // calls of the latest assistant message not yet answered
	unanswered := func(i int) error {
		for _, m := range r.Messages[lastAssistant(r.Messages[:i])].ToolCalls {
			if pending[m.ID] {
				return fmt.Errorf("%w: message %d: tool call %q is not answered by a tool message", ErrInvalidRequest, i, m.ID)
			}
		}
		return nil
	}
	for i, m := range r.Messages {
		switch m.Role {
		case RoleSystem, RoleUser:
			if len(m.ToolCalls) > 0 || m.ToolCallID != "" {
				return fmt.Errorf("%w: message %d: a %s message carries tool calls or a tool call id", ErrInvalidRequest, i, m.Role)
			}
		case RoleAssistant:
			if m.ToolCallID != "" {
				return fmt.Errorf("%w: message %d: an assistant message carries a tool call id", ErrInvalidRequest, i)
			}
		case RoleTool:
			if m.ToolCallID == "" {
				return fmt.Errorf("%w: message %d: tool message without a tool call id", ErrInvalidRequest, i)
			}
			if !pending[m.ToolCallID] {
				return fmt.Errorf("%w: message %d: tool message answers %q, which is not an unanswered call of the assistant message before it", ErrInvalidRequest, i, m.ToolCallID)
			}
			delete(pending, m.ToolCallID)
			continue
		default:
			return fmt.Errorf("%w: message %d: unknown role %q", ErrInvalidRequest, i, m.Role)
		}
		if len(pending) > 0 {
			if err := unanswered(i); err != nil {
				return err
			}
		}
		if m.Role == RoleAssistant {
			for j, c := range m.ToolCalls {
				if c.ID == "" {
					return fmt.Errorf("%w: message %d: tool call %d without an id", ErrInvalidRequest, i, j)
				}
				if pending[c.ID] {
					return fmt.Errorf("%w: message %d: duplicate tool call id %q", ErrInvalidRequest, i, c.ID)
				}
				pending[c.ID] = true
			}
		}
	}
	if len(pending) > 0 {
		if err := unanswered(len(r.Messages)); err != nil {
			return err
		}
	}
	names := make(map[string]bool, len(r.Tools))
	for i, t := range r.Tools {
		if t.Name == "" {
			return fmt.Errorf("%w: tool %d without a name", ErrInvalidRequest, i)
		}
		if names[t.Name] {
			return fmt.Errorf("%w: duplicate tool %q", ErrInvalidRequest, t.Name)
		}
		names[t.Name] = true
		if len(t.Parameters) > 0 && !json.Valid(t.Parameters) {
			return fmt.Errorf("%w: tool %q: parameters are not valid JSON", ErrInvalidRequest, t.Name)
		}
	}
	switch r.ToolChoice.Mode {
	case ToolChoiceDefault, ToolChoiceAuto, ToolChoiceNone, ToolChoiceRequired:
		if r.ToolChoice.Name != "" {
			return fmt.Errorf("%w: tool choice %q names a tool", ErrInvalidRequest, r.ToolChoice.Mode)
		}
	case ToolChoiceFunction:
		if !names[r.ToolChoice.Name] {
			return fmt.Errorf("%w: tool choice names %q, which is not an offered tool", ErrInvalidRequest, r.ToolChoice.Name)
		}
	default:
		return fmt.Errorf("%w: unknown tool choice mode %q", ErrInvalidRequest, r.ToolChoice.Mode)
	}
	if r.MaxTokens != nil && *r.MaxTokens <= 0 {
		return fmt.Errorf("%w: max tokens %d is not positive", ErrInvalidRequest, *r.MaxTokens)
	}
	return nil
}

// lastAssistant returns the index of the last assistant message of ms.
func lastAssistant(ms []Message) int {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Role == RoleAssistant {
			return i
		}
	}
	return 0
}
