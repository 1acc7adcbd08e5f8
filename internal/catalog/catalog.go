package catalog

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/skillstore"
)

// The builtins whose availability depends on the node (§12).
const (
	ToolApproval  = "builtin_node_approval"
	ToolDelegate  = "builtin_node_delegate"
	ToolOutputSet = "builtin_output_set"
)

// builtinOrder is the order of §12; builtins not listed (third-party ones)
// follow, sorted by name.
var builtinOrder = []string{
	"builtin_node_follow_up", ToolApproval, "builtin_node_finish", "builtin_node_fail", ToolDelegate, ToolOutputSet,
	"builtin_state_set", "builtin_evidence_get", "builtin_session_info",
	"builtin_env_current_datetime", "builtin_env_generate_uuid", "builtin_env_format_datetime", "builtin_env_add_datetime",
	"builtin_env_diff_datetime", "builtin_env_get_weekday", "builtin_env_random_int", "builtin_env_hash",
}

// DefaultDelegateMaxDepth is state.delegate-max-depth's default (§15).
const DefaultDelegateMaxDepth = 2

// BusinessTool is a business tool's definition as its MCP server lists it.
type BusinessTool struct {
	Name        string
	Title       string
	Description string
	InputSchema json.RawMessage
}

// Node is what the availability rules of §12 read about the node.
type Node struct {
	// WriteGated: a write call of this node is held by the write gate,
	// waiting for approval.
	WriteGated bool
	// DelegatableSkills are the skills this node may delegate to
	// (DelegatableSkills computes them).
	DelegatableSkills []string
	// Depth is the node's delegation depth (0 for a planned node); a
	// delegation creates a node at Depth+1, which must not exceed MaxDepth.
	Depth int
	// MaxDepth is state.delegate-max-depth; 0 means DefaultDelegateMaxDepth.
	MaxDepth int
	// OutputsUsed: someone uses the node's outputs (OutputsUsed computes it).
	OutputsUsed bool
}

// Input is everything a node's catalog is built from.
type Input struct {
	// Builtins are the manifests of the builtin plugins loaded for the
	// tenant: first-party and installed third-party.
	Builtins []abi.Manifest
	// Contract is the node's skill contract (nil: none configured).
	Contract *contract.Contract
	// ToolNames are the skill's business tools (skill_tool_binding).
	ToolNames []string
	// Business are the definitions of business tools, from their MCP
	// servers; tools not in ToolNames are ignored.
	Business []BusinessTool
	Node     Node
}

// Definition is one tool as the model is given it.
type Definition struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// Catalog is one node's tool catalog. It is immutable.
type Catalog struct {
	builtins  map[string]string // tool → plugin name
	offered   []Definition
	business  []string // toolNames, deduplicated, builtins removed
	callable  map[string]bool
	missing   []string
	contract  *contract.Contract
	builtinDs []Definition // offered builtins, in order
}

// New builds a node's catalog. It fails when two builtin plugins provide
// the same tool, or a third-party builtin's tool is also one of the
// skill's business tools (toolNames).
func New(in Input) (*Catalog, error) {
	c := &Catalog{builtins: map[string]string{}, callable: map[string]bool{}, contract: in.Contract}
	specs := map[string]abi.ToolSpec{}
	for _, m := range in.Builtins {
		for _, t := range m.Tools {
			if prev, dup := c.builtins[t.Name]; dup {
				return nil, fmt.Errorf("catalog: tool %s of %s and %s: %w", t.Name, prev, m.Name, ErrDuplicateTool)
			}
			c.builtins[t.Name] = m.Name
			c.callable[t.Name] = true
			specs[t.Name] = t
		}
	}
	names := make([]string, 0, len(specs))
	for n := range specs {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		oi, oj := rank(names[i]), rank(names[j])
		if oi != oj {
			return oi < oj
		}
		return names[i] < names[j]
	})
	for _, n := range names {
		if !offered(n, in.Node) {
			continue
		}
		s := specs[n]
		c.builtinDs = append(c.builtinDs, Definition{Name: n, Description: s.Description, InputSchema: s.InputSchema})
	}
	defs := map[string]BusinessTool{}
	for _, b := range in.Business {
		defs[b.Name] = b
	}
	c.offered = append(c.offered, c.builtinDs...)
	for _, n := range in.ToolNames {
		if p := c.builtins[n]; p != "" && !strings.HasPrefix(n, ReservedPrefix) {
			// A third-party builtin named like one of the skill's business
			// tools would answer its calls past every guard.
			return nil, fmt.Errorf("catalog: tool %s of builtin %s: %w", n, p, ErrBusinessName)
		}
		if n == "" || c.callable[n] {
			continue // builtins are governed by their own rules; duplicates once
		}
		c.callable[n] = true
		c.business = append(c.business, n)
		b, ok := defs[n]
		if !ok {
			c.missing = append(c.missing, n)
			continue
		}
		desc := b.Description
		if desc == "" {
			desc = b.Title
		}
		schema := b.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		c.offered = append(c.offered, Definition{Name: n, Description: desc, InputSchema: schema})
	}
	return c, nil
}

func rank(name string) int {
	if i := slices.Index(builtinOrder, name); i >= 0 {
		return i
	}
	return len(builtinOrder)
}

// offered applies the availability rules of §12 to a builtin.
func offered(name string, n Node) bool {
	switch name {
	case ToolApproval:
		return n.WriteGated
	case ToolDelegate:
		max := n.MaxDepth
		if max == 0 {
			max = DefaultDelegateMaxDepth
		}
		return len(n.DelegatableSkills) > 0 && n.Depth+1 <= max
	case ToolOutputSet:
		return n.OutputsUsed
	}
	return true
}

// Visible reports whether the node may call the tool: any builtin, or a
// business tool in toolNames.
func (c *Catalog) Visible(name string) bool { return c.callable[name] }

// Check returns nil when the node may call the tool, and otherwise the
// CATALOG_DENIED observation the loop records for the call.
func (c *Catalog) Check(name string, l abi.Locale) *abi.Observation {
	if c.Visible(name) {
		return nil
	}
	o := abi.Rejected(abi.CatalogDenied, abi.CatalogDenied.Reason(l, "tool", name), abi.NextCatalog.Text(l))
	o.Locale = l
	return &o
}

// Plugin returns the name of the builtin plugin providing a tool, or "" for
// a business or unknown tool.
func (c *Catalog) Plugin(tool string) string { return c.builtins[tool] }

// Definitions are the tools offered to the model: the available builtins
// in the order of §12 (third-party ones after, by name), then the business
// tools with a known definition in toolNames order.
func (c *Catalog) Definitions() []Definition { return slices.Clone(c.offered) }

// Business returns the node's business tools (toolNames without builtins
// and duplicates).
func (c *Catalog) Business() []string { return slices.Clone(c.business) }

// Missing returns the business tools in toolNames that have no definition;
// they are callable but the model is not shown them. Log them.
func (c *Catalog) Missing() []string { return slices.Clone(c.missing) }

// Prompt writes the tool catalogue of the node prompt in the locale: the
// offered builtins with their descriptions, then the business tools
// configured in contract.tools with label, side effect and arguments.
func (c *Catalog) Prompt(l abi.Locale) string {
	en := l == abi.LocaleEN
	var b strings.Builder
	if en {
		b.WriteString("Builtin tools:\n")
	} else {
		b.WriteString("内置工具：\n")
	}
	for _, d := range c.builtinDs {
		b.WriteString("- " + d.Name)
		if d.Description != "" {
			b.WriteString(sep(en) + d.Description)
		}
		b.WriteString("\n")
	}
	var configured []string
	for _, n := range c.business {
		if c.contract.Tool(n) != nil {
			configured = append(configured, n)
		}
	}
	if len(configured) == 0 {
		return b.String()
	}
	if en {
		b.WriteString("Business tools:\n")
	} else {
		b.WriteString("业务工具：\n")
	}
	for _, n := range configured {
		t := c.contract.Tool(n)
		b.WriteString("- " + n)
		if t.Label != "" {
			b.WriteString(sep(en) + t.Label)
		}
		b.WriteString(effect(t, en) + "\n")
		if args := argList(t, en); args != "" {
			if en {
				b.WriteString("  arguments: " + args + "\n")
			} else {
				b.WriteString("  参数：" + args + "\n")
			}
		}
	}
	return b.String()
}

func sep(en bool) string {
	if en {
		return ": "
	}
	return "："
}

func effect(t *contract.Tool, en bool) string {
	switch {
	case t.IsWrite() && t.NeedsConfirm() && en:
		return " (write, needs the user's confirmation)"
	case t.IsWrite() && t.NeedsConfirm():
		return "（写操作，须经用户确认）"
	case t.IsWrite() && en:
		return " (write)"
	case t.IsWrite():
		return "（写操作）"
	case en:
		return " (read-only)"
	}
	return "（只读）"
}

// argList lists a tool's contract arguments with their labels; arguments
// the runtime fills (from, const) are marked so the model does not invent
// them.
func argList(t *contract.Tool, en bool) string {
	var parts []string
	for _, p := range t.ArgPaths() {
		a := t.Args[p]
		var notes []string
		if a.Label != "" {
			notes = append(notes, a.Label)
		}
		if a.From != nil || a.Const != nil {
			if en {
				notes = append(notes, "filled by the runtime")
			} else {
				notes = append(notes, "由系统填充")
			}
		}
		switch {
		case len(notes) == 0:
			parts = append(parts, p)
		case en:
			parts = append(parts, p+" ("+strings.Join(notes, ", ")+")")
		default:
			parts = append(parts, p+"（"+strings.Join(notes, "，")+"）")
		}
	}
	if en {
		return strings.Join(parts, ", ")
	}
	return strings.Join(parts, "、")
}

// DelegatableSkills returns the skills a node of skill self may delegate to
// (§15): delegatable contracts without write tools, other than self, sorted.
func DelegatableSkills(skills []*skillstore.Skill, self string) []string {
	var out []string
	for _, s := range skills {
		if s == nil || s.Contract == nil || s.Profile.SkillKey == self {
			continue
		}
		if s.Contract.Delegatable && len(s.Contract.WriteTools()) == 0 {
			out = append(out, s.Profile.SkillKey)
		}
	}
	sort.Strings(out)
	return out
}

// OutputsUsed reports whether someone uses a node's outputs (§12): a node
// depends on it, or one of its contract outputs is required, shared or
// makes an entity.
func OutputsUsed(c *contract.Contract, hasDependents bool) bool {
	if hasDependents {
		return true
	}
	if c == nil {
		return false
	}
	for _, o := range c.Outputs {
		if o.Required || o.Share != "" || o.Entity != nil {
			return true
		}
	}
	return false
}
