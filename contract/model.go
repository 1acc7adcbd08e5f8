package contract

import (
	"encoding/json"
	"slices"
)

// Mode is the execution mode of a skill (§3).
type Mode string

// Modes.
const (
	ModeReact Mode = "REACT"
	ModePlan  Mode = "PLAN"
)

// SideEffect says whether a tool changes state (§4).
type SideEffect string

// Side effects.
const (
	SideEffectNone  SideEffect = "NONE"
	SideEffectWrite SideEffect = "WRITE"
)

// When is the binding condition of a from expression (§5.4).
type When string

// Binding conditions.
const (
	WhenAlways When = "ALWAYS"
	WhenUnique When = "UNIQUE"
)

// SourceType is where a value came from (§5.3, §9); guards compare it with a
// parameter's or output's allowed sources.
type SourceType string

// Source types.
const (
	SourceUser       SourceType = "USER"
	SourceEvidence   SourceType = "EVIDENCE"
	SourceNodeOutput SourceType = "NODE_OUTPUT"
	SourceShared     SourceType = "SHARED"
	SourceSession    SourceType = "SESSION"
	SourcePriorTask  SourceType = "PRIOR_TASK"
	SourceModel      SourceType = "MODEL"
	SourceContract   SourceType = "CONTRACT"
	SourcePlatform   SourceType = "PLATFORM"
)

// MissingAction is what happens when a required parameter has no value (§5.5).
type MissingAction string

// Missing actions.
const (
	MissingAskUser  MissingAction = "ASK_USER"
	MissingCallTool MissingAction = "CALL_TOOL"
	MissingFail     MissingAction = "FAIL"
)

// Op is a success comparison (§6.1).
type Op string

// Success operators.
const (
	OpEQ     Op = "EQ"
	OpNE     Op = "NE"
	OpIN     Op = "IN"
	OpNotIN  Op = "NOT_IN"
	OpTruthy Op = "TRUTHY"
	OpExists Op = "EXISTS"
)

// OutputType is the value type of a node output (§8).
type OutputType string

// Output types.
const (
	OutputValue OutputType = "VALUE"
	OutputList  OutputType = "LIST"
)

// Share is the sharing scope of a node output (§8).
type Share string

// Share scopes.
const (
	ShareTask    Share = "TASK"
	ShareSession Share = "SESSION"
)

// Enum sets, case-sensitive (§18).
var (
	modes          = []string{string(ModeReact), string(ModePlan)}
	sideEffects    = []string{string(SideEffectNone), string(SideEffectWrite)}
	whens          = []string{string(WhenAlways), string(WhenUnique)}
	sourceTypes    = []string{"USER", "EVIDENCE", "NODE_OUTPUT", "SHARED", "SESSION", "PRIOR_TASK", "MODEL", "CONTRACT", "PLATFORM"}
	missingActions = []string{string(MissingAskUser), string(MissingCallTool), string(MissingFail)}
	ops            = []string{string(OpEQ), string(OpNE), string(OpIN), string(OpNotIN), string(OpTruthy), string(OpExists)}
	outputTypes    = []string{string(OutputValue), string(OutputList)}
	shares         = []string{string(ShareTask), string(ShareSession)}
)

// Contract is one parsed skill_contract with the spec's defaults applied.
// Strings follow the spec's rule that "" means "not configured"; attributes
// whose absence changes behaviour are pointers or nil slices/raw values.
type Contract struct {
	SkillKey    string
	Mode        Mode   // default REACT
	Delegatable bool   // default false
	Target      string // "" = not configured
	Inputs      map[string]*Input
	Outputs     map[string]*Output
	Tools       map[string]*Tool
	Guards      []Guard // Warden extension: tenant guards for this skill
}

// ToolNames returns the keys of Tools, sorted.
func (c *Contract) ToolNames() []string { return sortedKeys(c.Tools) }

// InputNames returns the keys of Inputs, sorted.
func (c *Contract) InputNames() []string { return sortedKeys(c.Inputs) }

// OutputNames returns the keys of Outputs, sorted.
func (c *Contract) OutputNames() []string { return sortedKeys(c.Outputs) }

// Tool returns the contract of a business tool, or nil when the tool is not
// configured (it then runs by the default rules of §1.3).
func (c *Contract) Tool(name string) *Tool {
	if c == nil {
		return nil
	}
	return c.Tools[name]
}

// WriteTools returns the names of the WRITE tools, sorted.
func (c *Contract) WriteTools() []string {
	var out []string
	for _, n := range c.ToolNames() {
		if c.Tools[n].IsWrite() {
			out = append(out, n)
		}
	}
	return out
}

// Input is a node input (§7).
type Input struct {
	Name     string
	From     *Expr // nil = not configured: the same-named upstream output
	Required bool  // default true; only marks the input missing in the prompt
	Provider string
}

// EntitySpec names the fields that identify an entity (§6.3, §8).
type EntitySpec struct {
	Type   string
	ID     string // field holding the id; default "id"
	Name   string // field holding the display name; default "name"
	Scalar string // field name given to a scalar value; "" = scalars make no entity
}

// Output is a node output (§8).
type Output struct {
	Key       string
	Type      OutputType // default VALUE
	Fields    []string
	MinItems  int // default 1
	Hint      string
	Required  bool  // default true
	Share     Share // "" = not shared
	Entity    *EntitySpec
	Sources   []SourceType    // empty = every source but MODEL
	Constant  json.RawMessage // nil = not configured
	Sensitive bool            // parsed, not used (§19)
}

// Tool is the contract of one business tool (§4).
type Tool struct {
	Name           string
	Label          string
	SideEffect     SideEffect // default NONE
	Confirm        *bool      // nil = default by side effect; see NeedsConfirm
	IdempotencyKey []string
	Args           map[string]*Arg
	Success        *Success
	Error          *ErrorPaths
	Extracts       []Extract
	Verify         *Verify

	// Warden extensions.
	TimeoutMs *int64 // nil = the runtime's default timeout
	Retry     *Retry // nil = no retry; only allowed on NONE tools
	// Fallback names another read tool of this contract that the next step
	// suggests once this read tool's retries are exhausted
	// (TOOL_USE_RELIABILITY §3.2); "" = none.
	Fallback string

	argPaths []string // Args' keys sorted by the parser (ArgPaths)
}

// IsWrite reports whether the tool has sideEffect WRITE.
func (t *Tool) IsWrite() bool { return t != nil && t.SideEffect == SideEffectWrite }

// NeedsConfirm is the effective confirm flag: the configured value, else
// true for WRITE and false for NONE.
func (t *Tool) NeedsConfirm() bool {
	if t == nil {
		return false
	}
	if t.Confirm != nil {
		return *t.Confirm
	}
	return t.IsWrite()
}

// ArgPaths returns the keys of Args, sorted.
func (t *Tool) ArgPaths() []string {
	// The parser sorted them once; a Tool whose Args changed since is
	// sorted again.
	if t.argPaths != nil && len(t.argPaths) == len(t.Args) {
		same := true
		for _, k := range t.argPaths {
			if _, ok := t.Args[k]; !ok {
				same = false
				break
			}
		}
		if same {
			return slices.Clone(t.argPaths)
		}
	}
	return sortedKeys(t.Args)
}

// Arg is the contract of one parameter (§5).
type Arg struct {
	Path      ParamPath
	From      *Expr           // nil = not configured
	Const     json.RawMessage // nil = not configured
	When      When            // default ALWAYS
	Sources   []SourceType
	Required  bool // default true
	Enum      []json.RawMessage
	Missing   Missing
	Sensitive bool
	Label     string
	Fresh     *bool // parsed, not used (§19)
}

// Missing is what happens when a required parameter has no value (§5.5).
type Missing struct {
	Action  MissingAction // default ASK_USER
	Tool    string
	Message string
}

// Success is a business success condition (§6.1).
type Success struct {
	Path  string
	Op    Op              // "" = not configured (the spec does not check it at load)
	Value json.RawMessage // nil = not configured
}

// ErrorPaths locates the business error code and message (§6.2).
type ErrorPaths struct {
	Code    string
	Message string
}

// Extract is one semantic extract of a response (§6.3).
type Extract struct {
	Key    string
	Path   string
	Fields []string
	Entity *EntitySpec
}

// Verify is how an uncertain write is checked (§6.4).
type Verify struct {
	Tool string
	Args map[string]*VerifyArg // empty = pass the original request whole
}

// VerifyArg is one verify argument: a constant or a call.<path> expression.
type VerifyArg struct {
	From  *Expr
	Const json.RawMessage
}

// GuardPhase is when a tenant guard runs (Warden extension).
type GuardPhase string

// Guard phases.
const (
	PhaseBefore GuardPhase = "before"
	PhaseAfter  GuardPhase = "after"
)

// FailurePolicy is what happens when a tenant guard itself fails.
type FailurePolicy string

// Failure policies; closed is the default.
const (
	FailClosed FailurePolicy = "closed"
	FailOpen   FailurePolicy = "open"
	FailShadow FailurePolicy = "shadow"
)

// Guard is a tenant guard plugin attached to a skill (Warden extension).
type Guard struct {
	Ref      string          // name@version or sha256:<64 hex>
	Phase    GuardPhase      // required
	Position string          // first | last | before:<Guard> | after:<Guard>; default last
	Config   json.RawMessage // nil = no config; else a JSON object
	Failure  FailurePolicy   // default closed
}

// Retry is the retry policy of a read tool (Warden extension, after
// TOOL_USE_RELIABILITY §1.4 and §3.1).
type Retry struct {
	MaxAttempts int // total attempts including the first, 1..10
	Backoff     Backoff
}

// Backoff is an exponential backoff; defaults follow §3.1 (1 s, 2 s, 4 s).
type Backoff struct {
	InitialMs  int64   // default 1000
	Multiplier float64 // default 2
	MaxMs      int64   // default 4000
}

// Delay returns the wait before attempt n (n ≥ 2; the first attempt does not wait).
func (b Backoff) Delay(n int) int64 {
	if n < 2 {
		return 0
	}
	d := float64(b.InitialMs)
	for i := 2; i < n; i++ {
		d *= b.Multiplier
		if d >= float64(b.MaxMs) {
			return b.MaxMs
		}
	}
	return min(int64(d), b.MaxMs)
}

// FirstPartyGuards are the built-in guards a tenant guard position may
// anchor on, in chain order (§13).
var FirstPartyGuards = map[GuardPhase][]string{
	PhaseBefore: {"ArgPolicy", "ArgBinding", "ParamContract", "Fingerprint", "WriteGate"},
	PhaseAfter:  {"ResponseContract", "WriteGate", "Evidence", "Fingerprint"},
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
