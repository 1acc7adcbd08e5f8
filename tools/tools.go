// Package tools holds what every business-tool adapter shares: the
// description of a tool as its server lists it, and the interface an adapter
// satisfies. The adapters live below: tools/mcp (MCP over stdio or
// streamable HTTP) and tools/scripted (in-memory tools with fault injection
// for tests and scenarios).
package tools

import (
	"context"
	"encoding/json"

	"github.com/agentwarden/warden/loop/chain"
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
}

// Catalog lists the tools a server offers.
type Catalog interface {
	ListTools(ctx context.Context) ([]Tool, error)
}

// Provider is a source of business tools: it lists them and calls them.
// CallTool returns the tool's own failures as a Response with IsError and
// wraps the chain sentinels (chain.ErrTimeout, chain.ErrUnreachable,
// chain.ErrIO, chain.ErrRPC, chain.ErrInvalidParams) when the call itself
// failed, so the invoker classifies it per CONTRACT_SPEC §14.4.
type Provider interface {
	chain.Caller
	Catalog
}
