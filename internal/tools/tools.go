// Package tools holds what every business-tool adapter shares: the
// description of a tool as its server lists it, and the interface an adapter
// satisfies. The adapters live below: tools/mcp (MCP over stdio or
// streamable HTTP) and tools/scripted (in-memory tools with fault injection
// for tests and scenarios).
package tools

import (
	"context"
	"encoding/json"

	"github.com/agentwarden/warden/internal/chain"
)

// Tool describes one business tool as MCP tools/list reports it.
type Tool struct {
	Name string `json:"name"`
	// Title is the human-readable name (MCP title, else annotations.title).
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// InputSchema is the JSON Schema of the arguments (always an object).
	InputSchema json.RawMessage `json:"inputSchema"`
	// OutputSchema is the JSON Schema of structuredContent; nil when the
	// tool declares none.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Annotations are the server's hints about the tool, as listed; nil
	// when it sent none. A hint the server left out stays nil.
	Annotations *Annotations `json:"annotations,omitempty"`
	// TaskSupport is MCP's execution.taskSupport ("forbidden", "optional",
	// "required"); "" when the server did not say.
	TaskSupport string `json:"taskSupport,omitempty"`
	// Server names the MCP server that offers the tool; "" for a single
	// server or scripted tools.
	Server string `json:"server,omitempty"`
}

// Annotations are MCP's tool annotations. Each hint is nil when the server
// did not send it, so that an absent hint is never read as its default.
type Annotations struct {
	ReadOnlyHint    *bool `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool `json:"openWorldHint,omitempty"`
}

// HintsWrite reports whether the server's annotations say the tool changes
// something: readOnlyHint false, or destructiveHint true without
// readOnlyHint. A tool without hints is not a write (CONTRACT_SPEC §1.3:
// an unconfigured tool is a read); readOnlyHint true always wins, since
// destructiveHint only means something for a tool that is not read-only.
func (t Tool) HintsWrite() bool {
	a := t.Annotations
	switch {
	case a == nil:
		return false
	case a.ReadOnlyHint != nil:
		return !*a.ReadOnlyHint
	default:
		return a.DestructiveHint != nil && *a.DestructiveHint
	}
}

// Catalog lists the tools a server offers.
type Catalog interface {
	ListTools(ctx context.Context) ([]Tool, error)
}

// Provider is a source of business tools: it lists them and calls them.
// CallTool returns the tool's own failures as a Response with IsError and
// wraps the chain sentinels (chain.ErrTimeout, chain.ErrUnreachable,
// chain.ErrIO, chain.ErrRPC, chain.ErrInvalidParams, chain.ErrAuth) when the call itself
// failed, so the invoker classifies it per CONTRACT_SPEC §14.4.
type Provider interface {
	chain.Caller
	Catalog
}
