package tools

import (
	"slices"

	"github.com/agentwarden/warden/internal/catalog"
	"github.com/agentwarden/warden/internal/skillstore"
)

// Live is a Catalog that follows its servers' changes: Tools returns the
// list as it is now (after MCP notifications/tools/list_changed), without
// a request. tools/mcp's Client and Servers are Live.
type Live interface {
	Tools() []Tool
}

// Definition is a listed tool as a node's catalog offers it.
func Definition(t Tool) catalog.BusinessTool {
	return catalog.BusinessTool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema}
}

// LiveDefinitions returns what a skill's catalog reads each round: the
// definitions of its toolNames as p lists them now, so that a tool its
// server adds after start is offered once listed, and one it removes is
// no longer offered. atStart is the list the skill was assembled with
// (its annotations made the contract: HintedWrites). A tool that was not
// listed then is offered only when the skill's contract configures it, or
// its annotations do not hint a write: a write the contract is silent
// about would otherwise run as a read, with no approval.
func LiveDefinitions(p Live, sk *skillstore.Skill, atStart []Tool) func() []catalog.BusinessTool {
	known := map[string]bool{}
	for _, t := range atStart {
		known[t.Name] = true
	}
	return func() []catalog.BusinessTool {
		now := p.Tools()
		var out []catalog.BusinessTool
		for _, t := range now {
			if !slices.Contains(sk.ToolNames, t.Name) {
				continue
			}
			if !known[t.Name] && t.HintsWrite() && (sk.Contract == nil || sk.Contract.Tool(t.Name) == nil) {
				continue
			}
			out = append(out, Definition(t))
		}
		return out
	}
}
