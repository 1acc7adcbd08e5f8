package abi

import "encoding/json"

// Role is what a plugin is: a guard on business tool calls, or a builtin tool.
type Role string

// Plugin roles.
const (
	RoleGuard   Role = "guard"
	RoleBuiltin Role = "builtin"
)

// Phase is when a guard runs: before the business tool is invoked, or after.
type Phase string

// Guard phases (CONTRACT_SPEC §13).
const (
	PhaseBefore Phase = "before"
	PhaseAfter  Phase = "after"
)

// Request is the one envelope a plugin receives per decision (JSON). Guards
// get Phase, Args, Bound, Provenance, Contract and, after the call, Result;
// builtins get Args. Both get their own Config and the State views their
// manifest was granted. Guests read it with a JSON path reader (the Field*
// constants), never with reflection on the hot path.
type Request struct {
	ABI    int    `json:"abi"`
	Kind   Role   `json:"kind"`
	Phase  Phase  `json:"phase,omitempty"`
	Tool   string `json:"tool"`
	CallID string `json:"callId,omitempty"`
	// Args are the arguments as the model gave them (raw JSON text, which may
	// be invalid: ArgPolicy is the one that says so).
	Args json.RawMessage `json:"args,omitempty"`
	// ArgsText is set instead of Args when the model's arguments are not
	// valid JSON, so that the envelope itself stays valid.
	ArgsText string `json:"argsText,omitempty"`
	// Bound are the arguments as bound so far by earlier guards.
	Bound json.RawMessage `json:"bound,omitempty"`
	// Provenance maps a parameter path to the source of its value.
	Provenance map[string]string `json:"provenance,omitempty"`
	// Contract is the skill's contract for this tool (tools.<name>).
	Contract json.RawMessage `json:"contract,omitempty"`
	// Schema is the tool's input JSON Schema (MCP inputSchema), if any.
	Schema json.RawMessage `json:"schema,omitempty"`
	// OutputSchema is the tool's output JSON Schema (MCP outputSchema), if any.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Config is the plugin's own configuration, validated at load.
	Config json.RawMessage `json:"config,omitempty"`
	// State holds the views the plugin asked for and was granted, keyed by
	// capability ("state.ledger": …). A view not granted is absent.
	State map[string]json.RawMessage `json:"state,omitempty"`
	// Result is the business tool's observation (after phase only).
	Result *Observation `json:"result,omitempty"`
	// Response is the business tool's raw response (after phase only).
	Response json.RawMessage `json:"response,omitempty"`
	Locale   Locale          `json:"locale,omitempty"`
}

// Request field paths, for guests that read the envelope with a path reader.
const (
	FieldTool       = "tool"
	FieldPhase      = "phase"
	FieldCallID     = "callId"
	FieldArgs       = "args"
	FieldArgsText   = "argsText"
	FieldBound      = "bound"
	FieldProvenance = "provenance"
	FieldContract   = "contract"
	FieldSchema     = "schema"
	FieldOutSchema  = "outputSchema"
	FieldConfig     = "config"
	FieldState      = "state"
	FieldResult     = "result"
	FieldResponse   = "response"
	FieldLocale     = "locale"
)

// Fact records where one parameter's value came from (provenance), as a
// guard that passes reports it.
type Fact struct {
	Path   string `json:"path"`
	Source string `json:"source"`
	Detail string `json:"detail,omitempty"`
}

// Verdict is what one plugin call produced: either Pass (guards only, with
// optional rewritten arguments and provenance facts) or an Observation; plus
// the effects the host applies atomically when the call is accepted.
type Verdict struct {
	Pass        bool            `json:"pass,omitempty"`
	Args        json.RawMessage `json:"args,omitempty"`
	Facts       []Fact          `json:"facts,omitempty"`
	Observation *Observation    `json:"observation,omitempty"`
	Effects     []Effect        `json:"effects,omitempty"`
}
