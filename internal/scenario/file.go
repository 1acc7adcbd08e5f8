package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/internal/yamljson"
)

// Scenario is one scenario file. See docs/SCENARIOS.md for every field.
type Scenario struct {
	// Name defaults to the file name.
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	// Pending, when set, says why the scenario cannot pass yet; it is
	// reported as skipped, never as passed, and not run.
	Pending string `json:"pending,omitempty"`
	// Locale of the model-facing texts: zh (default) or en.
	Locale string                `json:"locale,omitempty"`
	Agent  contract.AgentProfile `json:"agent"`
	// User is the user's message that opens the task.
	User   string  `json:"user"`
	Skills []Skill `json:"skills"`
	// Skill is the skill_key the node runs; empty means the first skill.
	Skill string `json:"skill,omitempty"`
	Tools Tools  `json:"tools"`
	// Plugins are the tenant's own modules, by ref (name@version or
	// sha256:<64 hex>): guards that contracts attach with guards[].ref, and
	// third-party builtins offered to the node. The manifest's role says
	// which; the module must be the ref's.
	Plugins map[string]PluginModule `json:"plugins,omitempty"`
	Config  Config                  `json:"config,omitempty"`
	// Task, when set, runs the user's message (and Task.Messages) as
	// whole tasks: planning, pre-nodes, delegation. Model then holds the
	// scripted turns of the session not keyed in Models, in the order they
	// are asked for.
	Task *TaskSpec `json:"task,omitempty"`
	// State seeds the store before the node opens.
	State State `json:"state,omitempty"`
	// Platform is the login identity of every round (CONTRACT_SPEC §11):
	// open platform fields and their values, read by platform.*. A hidden
	// field (platform.hidden: passportId, clientId, sessionType, adminUser,
	// adminCompany) or an unknown one is refused at parse.
	Platform map[string]json.RawMessage `json:"platform,omitempty"`
	Model    []scripted.Turn            `json:"model"`
	// Models are scripted turns keyed by the node that asks for them
	// (t1.n1, t1.n1.d1), by its skill_key, or planner for the planning
	// turns; a request without a keyed sequence takes the next turn of
	// Model.
	Models map[string][]scripted.Turn `json:"models,omitempty"`
	// Replies answer the node's suspensions in order.
	Replies []Reply `json:"replies,omitempty"`
	Expect  Expect  `json:"expect"`

	// File is where the scenario was read from; relative paths in it
	// (tools.mcp.dir) resolve against the module root found above it.
	File string `json:"-"`
}

// Skill is one skill: its profile, its contract inline, its tools.
type Skill struct {
	SkillKey  string `json:"skill_key"`
	SkillName string `json:"skill_name,omitempty"`
	Manual    string `json:"manual,omitempty"`
	// Contract is the skill_contract, inline (YAML or JSON object).
	Contract  json.RawMessage `json:"contract"`
	ToolNames []string        `json:"toolNames"`
}

// Tools are the business tools: an MCP server, scripted tools, or both
// (a scripted tool shadows an MCP tool of the same name).
type Tools struct {
	MCP *MCP `json:"mcp,omitempty"`
	// MCPServers are several MCP servers instead of mcp, each named; a tool
	// name two of them offer is refused at setup.
	MCPServers []MCP          `json:"mcpServers,omitempty"`
	Scripted   []ScriptedTool `json:"scripted,omitempty"`
}

// MCP is an MCP server: a command started as a child (stdio), a Go package
// built first and started as a child, or a URL (streamable HTTP).
type MCP struct {
	// Name identifies the server; required in mcpServers.
	Name string `json:"name,omitempty"`
	// Build is a main package relative to the module root
	// ("./examples/mcp-cms"); it is built into a temporary directory and
	// started with Args.
	Build   string   `json:"build,omitempty"`
	Command []string `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	Env     []string `json:"env,omitempty"`
	// EnvAllow names variables of the runner's environment the child may
	// see besides the base set (PATH, HOME, …) and Env.
	EnvAllow []string `json:"envAllow,omitempty"`
	URL      string   `json:"url,omitempty"`
}

// PluginModule is one of the tenant's modules: a .wasm file (Path,
// relative to the scenario file) or a Go main package built for wasip1 as
// a reactor (Build, relative to the module root), with the capabilities
// the tenant grants it (none by default) and an optional sha256 pin. The
// short form is the path alone.
type PluginModule struct {
	Path         string   `json:"path,omitempty"`
	Build        string   `json:"build,omitempty"`
	SHA256       string   `json:"sha256,omitempty"`
	Capabilities []string `json:"capabilities,omitempty"`
}

// UnmarshalJSON reads the short form (a path) or the long form, refusing
// unknown keys.
func (m *PluginModule) UnmarshalJSON(b []byte) error {
	var path string
	if json.Unmarshal(b, &path) == nil {
		*m = PluginModule{Path: path}
		return nil
	}
	type long PluginModule
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var l long
	if err := dec.Decode(&l); err != nil {
		return fmt.Errorf("a path or {path|build, sha256, capabilities}: %w", err)
	}
	*m = PluginModule(l)
	return nil
}

// ScriptedTool is an in-memory tool with canned responses and faults.
type ScriptedTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Write       bool            `json:"write,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	// Responses answer the calls that run, in order; the last repeats.
	// Each is a JSON value (the tool's body).
	Responses []json.RawMessage `json:"responses,omitempty"`
	// Faults apply to the tool's calls in order (the i-th to call i+1).
	Faults []Fault `json:"faults,omitempty"`
}

// Fault is what goes wrong with one call of a scripted tool.
type Fault struct {
	// Kind: none, timeout, unreachable, error, iserror, business, empty,
	// partial, commit-then-timeout.
	Kind  string          `json:"kind"`
	Delay string          `json:"delay,omitempty"`
	Text  string          `json:"text,omitempty"`
	Body  json.RawMessage `json:"body,omitempty"`
}

// Config overrides the loop's limits and the invoker's defaults.
type Config struct {
	NoProgressLimit int    `json:"no_progress_limit,omitempty"`
	MaxRounds       int    `json:"max_rounds,omitempty"`
	ReconfirmAfter  string `json:"reconfirm_after,omitempty"`
	// ToolTimeout is the invoker's timeout for tools without timeoutMs.
	ToolTimeout string `json:"tool_timeout,omitempty"`
	// RealBackoff makes retries really wait; by default the invoker's
	// sleeps are recorded (expect.tools.backoff) and return at once.
	RealBackoff bool `json:"real_backoff,omitempty"`
	// The state.* keys of CONTRACT_SPEC: state.write-confirm-bypass-tools
	// (§14.1, default none), the scratch keys builtin_state_set may not
	// write (§12, default none), state.delegate-max-depth (§15, default
	// 2), the Fingerprint's breaker count (§13, default 3) and the tools
	// that may repeat with the same arguments (default none).
	WriteConfirmBypassTools []string `json:"write_confirm_bypass_tools,omitempty"`
	ReservedKeys            []string `json:"reserved_keys,omitempty"`
	DelegateMaxDepth        *int     `json:"delegate_max_depth,omitempty"`
	FingerprintLimit        int      `json:"fingerprint_limit,omitempty"`
	RepeatTools             []string `json:"repeat_tools,omitempty"`
}

// Reply is the scripted user's answer to one suspension: a follow-up
// answer, an approval decision, or whether an uncertain write took effect.
type Reply struct {
	Answer   string `json:"answer,omitempty"`
	Decision string `json:"decision,omitempty"`
	// Verified answers a VERIFY suspension: yes or no.
	Verified string `json:"verified,omitempty"`
	// After is how long after the suspension the user replies ("25h"
	// exercises reconfirm-after); 0 by default.
	After string `json:"after,omitempty"`
	// HeldArgs, with a decision, replace the arguments of the held write
	// before the decision is applied: the user decides on the arguments
	// the question showed, and what is held is no longer them.
	HeldArgs json.RawMessage `json:"held_args,omitempty"`
}

// Expect is what must hold after the run.
type Expect struct {
	// Status is the node's final status (DONE, FAILED, CANCELLED,
	// SUSPENDED); TaskStatus the task's.
	Status     string `json:"status,omitempty"`
	TaskStatus string `json:"task_status,omitempty"`
	// Output and Reason must be contained in the node's output and reason.
	Output string `json:"output,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Suspension is the kind of the final suspension (APPROVAL, FOLLOW_UP).
	Suspension string `json:"suspension,omitempty"`
	// Ordered events must appear in this order (others may come between);
	// Unordered ones anywhere; Absent ones nowhere.
	Ordered   []Event `json:"ordered,omitempty"`
	Unordered []Event `json:"unordered,omitempty"`
	Absent    []Event `json:"absent,omitempty"`
	// Suspensions are the kinds of every suspension of the run, in order
	// (APPROVAL, FOLLOW_UP, VERIFY); an empty list means none.
	Suspensions []string `json:"suspensions,omitempty"`
	// Load are skills that must be refused at load (CONTRACT_SPEC §16):
	// the skill is dropped, the others run; when the node's skill is
	// refused nothing runs and only these are checked.
	Load []LoadRefusal `json:"load,omitempty"`
	// Install are plugins (keys of plugins) that must be refused at
	// install; the run goes on without them.
	Install []InstallRefusal `json:"install,omitempty"`
	// Graph is every node of the tasks in the order they started, with
	// skill, final status, upstream nodes, delegating node and completion
	// target (task scenarios).
	Graph []GraphNode `json:"graph,omitempty"`
	// Prompts checks the system prompts the model was sent.
	Prompts *Prompts    `json:"prompts,omitempty"`
	Tools   *ToolChecks `json:"tools,omitempty"`
}

// LoadRefusal is a skill refused at load for a rule ("6", "W1", …);
// Contains must be in the refusal's text.
type LoadRefusal struct {
	Skill    string `json:"skill"`
	Rule     string `json:"rule"`
	Contains string `json:"contains,omitempty"`
}

// InstallRefusal is a module of plugins refused at install; Contains must
// be in the error.
type InstallRefusal struct {
	Plugin   string `json:"plugin"`
	Contains string `json:"contains,omitempty"`
}

// Event matches a trace event; empty fields match anything.
type Event struct {
	Kind    string `json:"kind,omitempty"`
	Tool    string `json:"tool,omitempty"`
	Outcome string `json:"outcome,omitempty"`
	// Code matches the code's name (APPROVAL_REQUIRED) or wire form.
	Code     string `json:"code,omitempty"`
	Category string `json:"category,omitempty"`
	Status   string `json:"status,omitempty"`
	Level    string `json:"level,omitempty"`
	// Message must be equal to the event's message; Contains contained in
	// it, each of them.
	Message  string   `json:"message,omitempty"`
	Contains []string `json:"contains,omitempty"`
	// Sent must each be contained in the tool message the model was sent
	// (the event's sent).
	Sent   []string `json:"sent,omitempty"`
	Stalls *int     `json:"stalls,omitempty"`
	// Guard and Plugin match what decided the event (a TOOL event's
	// deciding guard and its plugin's name@version, a GUARD event's guard).
	Guard  string `json:"guard,omitempty"`
	Plugin string `json:"plugin,omitempty"`
}

// Prompts are checks on every system prompt the model was sent.
type Prompts struct {
	// Node limits the checks to the prompts a node sent, named by its id
	// (t1.n2) or its skill, or "planner" for the planning requests; empty
	// checks every request's prompt.
	Node       string   `json:"node,omitempty"`
	Contain    []string `json:"contain,omitempty"`
	NotContain []string `json:"not_contain,omitempty"`
}

// ToolChecks are checks on the business tools' side.
type ToolChecks struct {
	// NoDuplicateWrites: no write call repeats an earlier one with the same
	// arguments (scripted tools).
	NoDuplicateWrites bool `json:"no_duplicate_writes,omitempty"`
	// Calls is how many times each tool was called (scripted tools).
	Calls map[string]int `json:"calls,omitempty"`
	// Backoff is the invoker's waits between attempts, in order ("1s").
	Backoff []string `json:"backoff,omitempty"`
	// Received is, for each tool, the arguments each of its calls
	// received after binding, in order, compared as JSON values
	// (scripted tools).
	Received map[string][]json.RawMessage `json:"received,omitempty"`
}

// Load reads a scenario file (YAML or JSON), refusing unknown keys.
func Load(path string) (Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Scenario{}, fmt.Errorf("scenario: %w: %w", ErrInvalidScenario, err)
	}
	s, err := Parse(b)
	if err != nil {
		return Scenario{}, fmt.Errorf("scenario: %s: %w", path, err)
	}
	s.File = path
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return s, nil
}

// Parse decodes and checks a scenario. The error wraps ErrInvalidScenario.
func Parse(b []byte) (Scenario, error) {
	// Exactly: arguments, responses and expectations keep their key order
	// and every digit (a YAML library's Go values would not).
	j, err := yamljson.ToJSON(b)
	if err != nil {
		return Scenario{}, fmt.Errorf("%w: %w", ErrInvalidScenario, err)
	}
	var s Scenario
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Scenario{}, fmt.Errorf("%w: error unmarshaling JSON: while decoding JSON: %w", ErrInvalidScenario, err)
	}
	if err := s.validate(); err != nil {
		return Scenario{}, fmt.Errorf("%w: %w", ErrInvalidScenario, err)
	}
	return s, nil
}

// validate checks a scenario file's rules, returning the first broken one.
// It stays long: one short rule per field; split, they would only be
// scattered.
func (s *Scenario) validate() error {
	if s.Pending != "" {
		return nil
	}
	if len(s.Skills) == 0 {
		return fmt.Errorf("no skills")
	}
	if s.User == "" {
		return fmt.Errorf("no user message")
	}
	if s.Locale != "" && s.Locale != "zh" && s.Locale != "en" {
		return fmt.Errorf("locale %q: want zh or en", s.Locale)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Platform)) {
		switch {
		case slices.Contains(contract.HiddenPlatformFields, k):
			return fmt.Errorf("platform.%s is a hidden field (platform.hidden: %s): it never reaches a node", k, strings.Join(contract.HiddenPlatformFields, ", "))
		case !contract.IsPlatformField(k):
			return fmt.Errorf("platform.%s is not a platform field (open: %s)", k, strings.Join(contract.OpenPlatformFields, ", "))
		case len(s.Platform[k]) == 0 || string(s.Platform[k]) == "null":
			return fmt.Errorf("platform.%s has no value", k)
		}
	}
	keys := map[string]bool{}
	for i, sk := range s.Skills {
		if sk.SkillKey == "" || len(sk.Contract) == 0 {
			return fmt.Errorf("skill %d: skill_key and contract are required", i+1)
		}
		keys[sk.SkillKey] = true
	}
	if s.Skill != "" && !keys[s.Skill] {
		return fmt.Errorf("skill %q is not among the skills", s.Skill)
	}
	if m := s.Tools.MCP; m != nil {
		if !m.oneSource() {
			return fmt.Errorf("tools.mcp: exactly one of build, command, url")
		}
	}
	if s.Tools.MCP != nil && len(s.Tools.MCPServers) > 0 {
		return fmt.Errorf("tools: mcp and mcpServers are exclusive")
	}
	names := map[string]bool{}
	for i, m := range s.Tools.MCPServers {
		switch {
		case m.Name == "":
			return fmt.Errorf("tools.mcpServers[%d]: name is required", i)
		case names[m.Name]:
			return fmt.Errorf("tools.mcpServers: two servers are named %q", m.Name)
		case !m.oneSource():
			return fmt.Errorf("tools.mcpServers[%d]: exactly one of build, command, url", i)
		}
		names[m.Name] = true
	}
	for _, t := range s.Tools.Scripted {
		if t.Name == "" {
			return fmt.Errorf("a scripted tool has no name")
		}
		for i, f := range t.Faults {
			if _, ok := faultKinds[f.Kind]; !ok {
				return fmt.Errorf("tool %s: fault %d: unknown kind %q", t.Name, i+1, f.Kind)
			}
			if f.Delay != "" {
				if _, err := time.ParseDuration(f.Delay); err != nil {
					return fmt.Errorf("tool %s: fault %d: %w", t.Name, i+1, err)
				}
			}
		}
	}
	for i, r := range s.Replies {
		set := 0
		for _, v := range []string{r.Answer, r.Decision, r.Verified} {
			if v != "" {
				set++
			}
		}
		switch {
		case set != 1:
			return fmt.Errorf("reply %d: exactly one of answer, decision, verified", i+1)
		case r.Verified != "" && r.Verified != "yes" && r.Verified != "no":
			return fmt.Errorf("reply %d: verified %q: want yes or no", i+1, r.Verified)
		case r.Decision != "" && r.Decision != "CONFIRM" && r.Decision != "REJECT" && r.Decision != "CANCEL":
			return fmt.Errorf("reply %d: decision %q: want CONFIRM, REJECT or CANCEL", i+1, r.Decision)
		case len(r.HeldArgs) > 0 && r.Decision == "":
			return fmt.Errorf("reply %d: held_args goes with a decision", i+1)
		case len(r.HeldArgs) > 0 && !json.Valid(r.HeldArgs):
			return fmt.Errorf("reply %d: held_args is not JSON", i+1)
		}
		if r.After != "" {
			if _, err := time.ParseDuration(r.After); err != nil {
				return fmt.Errorf("reply %d: %w", i+1, err)
			}
		}
	}
	for _, d := range []string{s.Config.ReconfirmAfter, s.Config.ToolTimeout} {
		if d != "" {
			if _, err := time.ParseDuration(d); err != nil {
				return fmt.Errorf("config: %w", err)
			}
		}
	}
	if err := s.State.validate(); err != nil {
		return err
	}
	for _, ref := range slices.Sorted(maps.Keys(s.Plugins)) {
		m := s.Plugins[ref]
		switch {
		case !pluginRefRe.MatchString(ref):
			return fmt.Errorf("plugins.%s: want name@version or sha256:<64 lowercase hex>", ref)
		case (m.Path == "") == (m.Build == ""):
			return fmt.Errorf("plugins.%s: exactly one of path, build", ref)
		}
	}
	for i, in := range s.Expect.Install {
		if _, ok := s.Plugins[in.Plugin]; !ok {
			return fmt.Errorf("expect.install[%d]: %q is not a key of plugins", i, in.Plugin)
		}
	}
	for i, l := range s.Expect.Load {
		if !keys[l.Skill] || l.Rule == "" {
			return fmt.Errorf("expect.load[%d]: a skill of the scenario and a rule are required", i)
		}
	}
	if s.Task != nil && (len(s.State.Ledger)+len(s.State.Evidence)+len(s.State.Scratch) > 0 || s.Skill != "") {
		return fmt.Errorf("task: state.ledger, state.evidence, state.scratch and skill are for one-node scenarios")
	}
	if s.Task != nil {
		for _, k := range slices.Sorted(maps.Keys(s.State.Shared)) {
			if s.State.Shared[k].Share == contract.ShareTask {
				return fmt.Errorf("task: state.shared.%s: share TASK is for one-node scenarios (a task's values start empty): want SESSION", k)
			}
		}
	}
	if s.Task == nil && s.Expect.Graph != nil {
		return fmt.Errorf("expect.graph: for task scenarios")
	}
	// The catalog and builtin_node_delegate read a depth of 0 as the
	// default, so 0 cannot forbid delegation: it is refused here.
	if d := s.Config.DelegateMaxDepth; d != nil && *d < 1 {
		return fmt.Errorf("config: delegate_max_depth %d: want 1 or more", *d)
	}
	for _, d := range s.Expect.toolBackoff() {
		if _, err := time.ParseDuration(d); err != nil {
			return fmt.Errorf("expect.tools.backoff: %w", err)
		}
	}
	if _, err := scripted.New(s.Model); err != nil {
		return err
	}
	for k, seq := range s.Models {
		if k == "" {
			return fmt.Errorf("models: an empty key")
		}
		if _, err := scripted.New(seq); err != nil {
			return fmt.Errorf("models.%s: %w", k, err)
		}
	}
	return nil
}

func (e Expect) toolBackoff() []string {
	if e.Tools == nil {
		return nil
	}
	return e.Tools.Backoff
}

// oneSource reports whether exactly one of build, command and url is set.
func (m *MCP) oneSource() bool {
	n := 0
	for _, set := range []bool{m.Build != "", len(m.Command) > 0, m.URL != ""} {
		if set {
			n++
		}
	}
	return n == 1
}

// pluginRefRe is a plugins key: a ref as a contract's guards[].ref takes
// it (rule W1), or a builtin's name@version.
var pluginRefRe = regexp.MustCompile(`^([a-z0-9][a-z0-9._-]*@[0-9A-Za-z][0-9A-Za-z.+-]*|sha256:[0-9a-f]{64})$`)
