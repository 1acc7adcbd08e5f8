package chain

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/jsonschema"
	"github.com/agentwarden/warden/internal/services"
)

// Guard is one guard plugin as the chain sees it. *host.Plugin satisfies it
// through Wasm; Native runs the same plugin in-process.
type Guard interface {
	// Name is the chain position name (ArgPolicy, …, or a tenant ref).
	Name() string
	// Guard decides one phase of one call. It always returns a verdict: a
	// failing plugin has already been turned into one by its failure policy.
	Guard(ctx context.Context, tenant string, req *abi.Request) abi.Verdict
}

// Chain is the ordered guards of one skill around the invoker.
type Chain struct {
	Before  []Guard
	After   []Guard
	Invoker *Invoker
	// Visible reports whether the node may call a tool; nil allows every
	// tool. A call to a tool it refuses is CATALOG_DENIED before any guard.
	Visible func(tool string) bool
}

// Call is one tool call to run.
type Call struct {
	Tenant string
	CallID string
	Tool   string
	// Args are the model's arguments exactly as given (maybe invalid JSON).
	Args []byte
	// Contract is the tool's contract (tools.<name>) as JSON and parsed;
	// both nil for a tool the contract does not configure.
	Contract     json.RawMessage
	ToolContract *contract.Tool
	// Schema and OutputSchema are the tool's MCP input and output schemas.
	Schema       json.RawMessage
	OutputSchema json.RawMessage
	// State holds the state views, by capability; each guard receives only
	// the views its manifest was granted.
	State  map[string]json.RawMessage
	Locale abi.Locale
	// Commit, when set, is called once the before guards passed and just
	// before the business tool is: it must make their effects (a write's
	// ledger.reserve) and the bound arguments durable, so that a process
	// killed during the call leaves the write STARTED for recovery
	// (CONTRACT_SPEC §14.3). Committed effects are not in Result.Effects;
	// a Commit that fails leaves the tool uncalled and sets Result.Err.
	Commit func(effects []abi.Effect, args json.RawMessage) error
}

// Result is what the call came to.
type Result struct {
	Observation abi.Observation
	// Effects of every accepted verdict, in order, for the caller to apply
	// atomically.
	Effects []abi.Effect
	// Invoked reports whether the business tool was called.
	Invoked bool
	// Err is Call.Commit's error: the tool was not called.
	Err error
	// Args are the arguments as finally bound (what was sent, if invoked).
	Args       json.RawMessage
	Provenance map[string]string
	// Response is the tool's response (after phase input), if any.
	Response json.RawMessage
	Attempts int
	Trace    []Step
	// Decider is the step of the guard whose verdict is the observation: the
	// before guard that ended the call, or the last after guard that
	// replaced the tool's result. Nil when the tool's result stands, or the
	// chain itself refused the call (catalog, arguments).
	Decider *Step
}

// Step is one guard's part in a call, for traces and profiles.
type Step struct {
	Guard string
	// Plugin and Generation name the module that served the guard: its
	// name@version and slot generation (0 outside a slot). Plugin is empty
	// for a guard that does not say (see Identified).
	Plugin     string
	Generation uint64
	Phase      abi.Phase
	Verdict    string // "pass", "rewrite", or "<OUTCOME> <CODE>"
	// Policy is set when the guard's failure policy set its verdict aside
	// (see Tenant): host.Shadow (Verdict is what it decided, not applied)
	// or host.FailOpen (Verdict is its own failure, let through).
	// Observation is then that verdict's observation, if any.
	Policy      host.FailurePolicy
	Observation *abi.Observation
	Duration    time.Duration
}

// newStep records one guard's verdict v, as decided and before its failure
// policy.
func newStep(g Guard, phase abi.Phase, v abi.Verdict, policy host.FailurePolicy, d time.Duration) Step {
	s := Step{Guard: g.Name(), Phase: phase, Verdict: summary(v), Policy: policy, Duration: d}
	s.Plugin, s.Generation = identify(g)
	if policy != "" {
		s.Observation = v.Observation
	}
	return s
}

// Run runs the call through the chain.
//
// The guards of a phase share one envelope (host.Envelope): its common part
// is encoded once and again only after a guard changed it (rewritten
// arguments, provenance facts, an after guard's observation), so each guard
// sees the effects of the guards before it exactly as if its request had
// been built afresh, while the state views are spliced in as shared bytes.
// A Guard that does not take envelopes gets a request of its own.
func (c *Chain) Run(ctx context.Context, call Call) Result {
	res := Result{Provenance: map[string]string{}}
	if c.Visible != nil && !c.Visible(call.Tool) {
		l := call.Locale
		res.Observation = abi.Rejected(abi.CatalogDenied, abi.CatalogDenied.Reason(l, "tool", call.Tool), abi.NextCatalog.Text(l))
		res.Observation.Locale = l
		return res
	}
	res.Trace = make([]Step, 0, len(c.Before)+len(c.After))
	ctx = services.WithValidated(ctx)
	base := baseRequest(call)
	env := envelopePool.Get().(*host.Envelope)
	defer func() {
		env.Reset()
		envelopePool.Put(env)
	}()
	bound, rewriter, refused := c.before(ctx, call, base, env, &res)
	if refused {
		return res
	}
	args := current(bound, base.Args)
	res.Args = args
	if args == nil {
		// No guard refused arguments that are not JSON; the tool must not
		// see them either.
		l := call.Locale
		res.Observation = abi.Rejected(abi.ArgJSONInvalid, abi.ArgJSONInvalid.Reason(l, "detail", abi.ArgsJSONDetail(l, base.ArgsText)), abi.NextFixArgs.Text(l))
		res.Observation.Locale = l
		return res
	}
	if o, ok := checkArgs(ctx, call, args, rewriter); !ok {
		res.Observation = o
		return res
	}
	if call.Commit != nil {
		if err := call.Commit(res.Effects, args); err != nil {
			res.Err = fmt.Errorf("chain: commit before %s: %w", call.Tool, err)
			return res
		}
		res.Effects = nil
	}
	inv := c.Invoker.Invoke(ctx, Invocation{Tool: call.Tool, Args: args, Contract: call.ToolContract, Locale: call.Locale})
	res.Invoked, res.Attempts, res.Response = true, inv.Attempts, inv.Response
	c.after(ctx, call, base, env, args, inv, &res)
	return res
}

// baseRequest is the request every guard of the call starts from: the
// arguments as JSON, or as text when they are not.
func baseRequest(call Call) abi.Request {
	base := abi.Request{
		Tool: call.Tool, CallID: call.CallID, Contract: call.Contract,
		Schema: call.Schema, OutputSchema: call.OutputSchema, Locale: call.Locale,
	}
	switch {
	case abi.ValidJSON(call.Args):
		base.Args = call.Args
	case len(bytes.TrimSpace(call.Args)) == 0 && !requires(call.Schema):
		// No arguments for a tool that requires none: the empty object,
		// as the model meant. Any other text passes on as it is.
		base.Args = json.RawMessage(`{}`)
	default:
		base.ArgsText = string(call.Args)
	}
	return base
}

// before runs the before phase: bound is the arguments as the last guard
// that rewrote them (rewriter) left them; refused says a guard refused
// the call (res holds its observation).
func (c *Chain) before(ctx context.Context, call Call, base abi.Request, env *host.Envelope, res *Result) (bound json.RawMessage, rewriter string, refused bool) {
	stale := true // env does not hold the request the next guard must see
	for _, g := range c.Before {
		var v abi.Verdict
		var start time.Time
		if eg, ok := g.(EnvelopeGuard); ok {
			if stale {
				c.setEnvelope(env, base, call, abi.PhaseBefore, bound, res.Provenance, nil, nil)
				stale = false
			}
			start = time.Now()
			v = eg.GuardEnvelope(ctx, call.Tenant, env)
		} else {
			req := c.request(base, call, abi.PhaseBefore, bound, res.Provenance)
			start = time.Now()
			v = g.Guard(ctx, call.Tenant, req)
		}
		d := time.Since(start)
		applied, policy := applyPolicy(g, v)
		res.Trace = append(res.Trace, newStep(g, abi.PhaseBefore, v, policy, d))
		v = applied
		res.Effects = appendEffects(res.Effects, v.Effects)
		if v.Observation != nil {
			res.Observation = *v.Observation
			res.Args = current(bound, base.Args)
			res.Decider = &res.Trace[len(res.Trace)-1]
			return bound, rewriter, true
		}
		if v.Args != nil {
			bound, rewriter = v.Args, g.Name()
			stale = true
		}
		for _, f := range v.Facts {
			res.Provenance[f.Path] = f.Source
			stale = true
		}
	}
	return bound, rewriter, false
}

// after runs the after phase on the invocation's result: the last guard
// that gave an observation decides what the model sees.
func (c *Chain) after(ctx context.Context, call Call, base abi.Request, env *host.Envelope, args json.RawMessage, inv Invoked, res *Result) {
	obs := inv.Observation
	stale := true
	decider := -1
	for _, g := range c.After {
		var v abi.Verdict
		var start time.Time
		if eg, ok := g.(EnvelopeGuard); ok {
			if stale {
				o := obs
				c.setEnvelope(env, base, call, abi.PhaseAfter, args, res.Provenance, &o, inv.Response)
				stale = false
			}
			start = time.Now()
			v = eg.GuardEnvelope(ctx, call.Tenant, env)
		} else {
			req := c.request(base, call, abi.PhaseAfter, args, res.Provenance)
			o := obs
			req.Result = &o
			req.Response = inv.Response
			start = time.Now()
			v = g.Guard(ctx, call.Tenant, req)
		}
		d := time.Since(start)
		applied, policy := applyPolicy(g, v)
		res.Trace = append(res.Trace, newStep(g, abi.PhaseAfter, v, policy, d))
		v = applied
		res.Effects = appendEffects(res.Effects, v.Effects)
		if v.Observation != nil {
			obs = *v.Observation
			stale = true
			decider = len(res.Trace) - 1
		}
	}
	res.Observation = obs
	if decider >= 0 {
		res.Decider = &res.Trace[decider]
	}
}

// JudgeGuard is the chain position that judges a business response
// (CONTRACT_SPEC §13 step 6): the ResponseContract guard, whatever plugin
// fills it.
const JudgeGuard = "ResponseContract"

// Judge judges a response the invoker returned outside a guarded call (a
// write's verify tool, CONTRACT_SPEC §6.4) with the chain's judge, the
// after guard at JudgeGuard, exactly as it judges the responses of guarded
// calls: it sees the call with the invoker's observation and the response,
// and its observation, if it gives one, is what the call came to;
// otherwise the invoker's. Its effects are not applied: a verify records
// nothing but its verdict. ok is false when the chain has no judge.
func (c *Chain) Judge(ctx context.Context, call Call, inv Invoked) (obs abi.Observation, ok bool) {
	i := indexOf(c.After, JudgeGuard)
	if i < 0 {
		return inv.Observation, false
	}
	base := abi.Request{
		Tool: call.Tool, CallID: call.CallID, Contract: call.Contract,
		Schema: call.Schema, OutputSchema: call.OutputSchema, Locale: call.Locale, Args: call.Args,
	}
	o := inv.Observation
	var v abi.Verdict
	if eg, isEnv := c.After[i].(EnvelopeGuard); isEnv {
		env := envelopePool.Get().(*host.Envelope)
		defer func() {
			env.Reset()
			envelopePool.Put(env)
		}()
		c.setEnvelope(env, base, call, abi.PhaseAfter, call.Args, nil, &o, inv.Response)
		v = eg.GuardEnvelope(ctx, call.Tenant, env)
	} else {
		req := c.request(base, call, abi.PhaseAfter, call.Args, nil)
		req.Result, req.Response = &o, inv.Response
		v = c.After[i].Guard(ctx, call.Tenant, req)
	}
	if v.Observation != nil {
		return *v.Observation, true
	}
	return inv.Observation, true
}

// EnvelopeGuard is a Guard that takes the envelope its phase's guards share
// (host.Plugin, host.Slot and Native do). It must only read env.
type EnvelopeGuard interface {
	Guard
	GuardEnvelope(ctx context.Context, tenant string, env *host.Envelope) abi.Verdict
}

var envelopePool = sync.Pool{New: func() any { return new(host.Envelope) }}

// setEnvelope prepares env as the request the next guards of phase see.
// The provenance map is encoded now, so later facts do not leak into it.
func (c *Chain) setEnvelope(env *host.Envelope, base abi.Request, call Call, phase abi.Phase, bound json.RawMessage,
	prov map[string]string, result *abi.Observation, response json.RawMessage) {
	req := base
	req.Phase, req.Bound, req.State, req.Result, req.Response = phase, bound, call.State, result, response
	if len(prov) > 0 {
		req.Provenance = prov
	}
	env.Set(&req)
}

// checkArgs validates the arguments about to be sent against the tool's
// input schema. ArgPolicy checks the model's arguments, but the guards after
// it may rewrite or bind them (a binding of the wrong type, a rewrite that
// drops a required field), and nothing else checks what the tool finally
// receives. A tool without a schema is not checked. A failure is a REJECTED
// ARG_REJECTED observation: the model fixes its arguments when they are its
// own, and changes course when a guard's rewrite made them invalid (it
// cannot fix a rewrite).
func checkArgs(ctx context.Context, call Call, args json.RawMessage, rewriter string) (abi.Observation, bool) {
	if len(bytes.TrimSpace(call.Schema)) == 0 {
		return abi.Observation{}, true
	}
	l := call.Locale
	reject := func(detail string, next abi.Hint) (abi.Observation, bool) {
		if rewriter != "" {
			if l == abi.LocaleEN {
				detail = "as rewritten by " + rewriter + ", " + detail
			} else {
				detail = "经 " + rewriter + " 改写后，" + detail
			}
		}
		o := abi.Rejected(abi.ArgRejected, abi.ArgRejected.Reason(l, "tool", call.Tool, "detail", detail), next.Text(l))
		o.Locale = l
		return o, false
	}
	schema := unsafe.String(unsafe.SliceData(call.Schema), len(call.Schema)) // the cache copies what it keeps
	s, err := jsonschema.Shared.Get(schema)
	if err != nil {
		return reject(err.Error(), abi.NextFail)
	}
	// A guard may have validated these bytes against this schema in the
	// same call (ArgPolicy does); the memo answers without a second pass.
	if services.ValidBefore(ctx, schema, unsafe.String(unsafe.SliceData(args), len(args))) {
		return abi.Observation{}, true
	}
	errs := s.Validate(args)
	if len(errs) == 0 {
		return abi.Observation{}, true
	}
	problems := make([]string, len(errs))
	for i, e := range errs {
		problems[i] = e.Error()
	}
	sep, next := "；", abi.NextFixArgs
	if l == abi.LocaleEN {
		sep = "; "
	}
	if rewriter != "" {
		next = abi.NextChangeStrategy
	}
	return reject(strings.Join(problems, sep), next)
}

// request builds one guard's envelope: a fresh copy, because the host
// filters the state views per manifest in place.
func (c *Chain) request(base abi.Request, call Call, phase abi.Phase, bound json.RawMessage, prov map[string]string) *abi.Request {
	req := base
	req.Phase = phase
	req.Bound = bound
	if len(prov) > 0 {
		req.Provenance = make(map[string]string, len(prov))
		for k, v := range prov {
			req.Provenance[k] = v
		}
	}
	if len(call.State) > 0 {
		req.State = make(map[string]json.RawMessage, len(call.State))
		for k, v := range call.State {
			req.State[k] = v
		}
	}
	return &req
}

// appendEffects is append, growing the first time to room for the few
// dozen effects a call's guards return rather than doubling up to them.
func appendEffects(dst, add []abi.Effect) []abi.Effect {
	if cap(dst) == 0 && len(add) > 0 {
		dst = make([]abi.Effect, 0, max(16, 2*len(add)))
	}
	return append(dst, add...)
}

// requires reports whether an input schema names required properties at
// its top level. A schema that is not JSON counts as requiring: the empty
// text then stays what it is, and the schema check reports the schema.
func requires(schema json.RawMessage) bool {
	if len(bytes.TrimSpace(schema)) == 0 {
		return false
	}
	var s struct {
		Required []json.RawMessage `json:"required"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return true
	}
	return len(s.Required) > 0
}

func current(bound, args json.RawMessage) json.RawMessage {
	if bound != nil {
		return bound
	}
	return args
}

func summary(v abi.Verdict) string {
	switch {
	case v.Observation != nil:
		return v.Observation.Outcome.String() + " " + string(v.Observation.Code)
	case v.Args != nil:
		return "rewrite"
	default:
		return "pass"
	}
}

// Placement is a tenant guard and where its skill puts it.
type Placement struct {
	Guard    Guard
	Phase    abi.Phase
	Position string // first | last | before:<Name> | after:<Name>; "" = last
}

// Insert places tenant guards around the first-party guards of one phase
// (contract.Guard.Position). Guards placed at the same anchor keep their
// order.
func Insert(firstParty []Guard, phase abi.Phase, tenant []Placement) ([]Guard, error) {
	out := append([]Guard(nil), firstParty...)
	var last []Guard
	for _, p := range tenant {
		if p.Phase != phase {
			continue
		}
		pos := p.Position
		switch {
		case pos == "" || pos == "last":
			last = append(last, p.Guard)
		case pos == "first":
			i := 0
			for i < len(out) && isTenant(out[i], tenant) {
				i++
			}
			out = insertAt(out, i, p.Guard)
		default:
			var where, anchor string
			if n, err := fmt.Sscanf(pos, "before:%s", &anchor); n == 1 && err == nil {
				where = "before"
			} else if n, err := fmt.Sscanf(pos, "after:%s", &anchor); n == 1 && err == nil {
				where = "after"
			}
			i := indexOf(out, anchor)
			if where == "" || i < 0 {
				return nil, fmt.Errorf("chain: tenant guard %s at %q in phase %s: %w", p.Guard.Name(), pos, phase, ErrPosition)
			}
			if where == "after" {
				i++
				for i < len(out) && isTenant(out[i], tenant) {
					i++
				}
			}
			out = insertAt(out, i, p.Guard)
		}
	}
	return append(out, last...), nil
}

func insertAt(s []Guard, i int, g Guard) []Guard {
	s = append(s, nil)
	copy(s[i+1:], s[i:])
	s[i] = g
	return s
}

func indexOf(s []Guard, name string) int {
	for i, g := range s {
		if g.Name() == name {
			return i
		}
	}
	return -1
}

func isTenant(g Guard, tenant []Placement) bool {
	for _, p := range tenant {
		if p.Guard == g {
			return true
		}
	}
	return false
}
