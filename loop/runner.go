package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/catalog"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/skillstore"
	"github.com/agentwarden/warden/internal/state"
)

// Skill is one skill as the runner runs it: the loaded skill, its guard
// chain and its business tools' definitions.
type Skill struct {
	Skill *skillstore.Skill
	Chain *chain.Chain
	Tools []catalog.BusinessTool
	// Live, when set, gives the definitions each round instead of Tools:
	// the servers' list as it is now (tools.LiveDefinitions), so a tool
	// added after start is offered on the next round.
	Live func() []catalog.BusinessTool
}

// defs are the skill's business tool definitions now.
func (sk Skill) defs() []catalog.BusinessTool {
	if sk.Live != nil {
		return sk.Live()
	}
	return sk.Tools
}

// Options are what a Runner is built from.
type Options struct {
	Model model.Model
	Store state.Store
	Agent contract.AgentProfile
	// Skills by skill key.
	Skills []Skill
	// Builtins are the tenant's builtin plugins.
	Builtins []Builtin
	// Sink receives the trace; nil drops it.
	Sink   Sink
	Config Config
}

// Runner runs the nodes of one session.
type Runner struct {
	model     model.Model
	store     state.Store
	agent     contract.AgentProfile
	skills    map[string]Skill
	builtins  map[string]Builtin
	manifests []abi.Manifest
	sink      Sink
	cfg       Config
	seq       atomic.Int64
	// order is the skill keys in the order of Options.Skills.
	order  []string
	graphs graphs
	// reflect remembers, per node, that its last wave ended on a
	// non-success, for the next prompt's reflection steps.
	reflect sync.Map
	// spans holds the span context of each open node span (by node id)
	// and task span ("task " + task id), for the events emitted under it.
	spans sync.Map
}

// New checks the options and builds a runner.
func New(o Options) (*Runner, error) {
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	if o.Model == nil || o.Store == nil {
		return nil, fmt.Errorf("loop: a model and a store are required: %w", ErrInvalidConfig)
	}
	r := &Runner{model: o.Model, store: o.Store, agent: o.Agent, skills: map[string]Skill{}, builtins: map[string]Builtin{},
		sink: o.Sink, cfg: o.Config}
	if r.cfg.Now == nil {
		r.cfg.Now = time.Now
	}
	for _, s := range o.Skills {
		if s.Skill == nil || s.Chain == nil {
			return nil, fmt.Errorf("loop: skill without contract or chain: %w", ErrInvalidConfig)
		}
		if _, dup := r.skills[s.Skill.Profile.SkillKey]; !dup {
			r.order = append(r.order, s.Skill.Profile.SkillKey)
		}
		r.skills[s.Skill.Profile.SkillKey] = s
	}
	for _, b := range o.Builtins {
		m := b.Manifest()
		r.builtins[m.Name] = b
		r.manifests = append(r.manifests, m)
	}
	return r, nil
}

// Exit is how a node left the loop.
type Exit struct {
	// Status is the node's status: DONE, FAILED, CANCELLED, SUSPENDED, or
	// RUNNING when it waits for a delegated pre-node.
	Status state.Status
	// Suspension is what the user is asked, when SUSPENDED.
	Suspension *state.Suspension
	// Output is the finish output; Reason why it failed or was cancelled.
	Output string
	Reason string
	// Delegation is the pre-node to run first, when the node delegated.
	Delegation *abi.Delegation
	// Reply is what the user is told when an approval was refused or the
	// task cancelled (what was not done).
	Reply string
}

func (r *Runner) emit(n state.Node, e Event) {
	if r.sink == nil {
		return
	}
	e.Seq = r.seq.Add(1)
	e.Task, e.Node = n.TaskID, n.ID
	e.TraceID, e.SpanID = r.spanOf(n)
	if e.Level == "" {
		e.Level = "INFO"
	}
	r.sink.Emit(e)
}

func exitOf(n state.Node) Exit {
	return Exit{Status: n.Status, Suspension: n.Suspension, Output: n.Output, Reason: n.Reason}
}

// Run runs a node until it leaves the loop. A node that is not RUNNING is
// returned as it is. Errors are the host failing (model, store); a node
// that fails is an Exit.
func (r *Runner) Run(ctx context.Context, nodeID string) (Exit, error) {
	ctx, span := r.startNodeSpan(ctx, nodeID)
	exit, err := r.run(ctx, nodeID)
	endNodeSpan(span, exit, err)
	return exit, err
}

func (r *Runner) run(ctx context.Context, nodeID string) (Exit, error) {
	n, err := r.store.Node(nodeID)
	if err != nil {
		return Exit{}, fmt.Errorf("loop: run: %w", err)
	}
	ctx = r.nodeSpanFor(ctx, n)
	if n.Status != state.Running {
		return exitOf(n), nil
	}
	sk, ok := r.skills[n.SkillKey]
	if !ok {
		return Exit{}, fmt.Errorf("loop: node %s: skill %q: %w", n.ID, n.SkillKey, ErrUnknownSkill)
	}
	if n.Target == "" && n.Rounds == 0 {
		// CONTRACT_SPEC §10.1 order 2: the contract's target, when it is a
		// write tool of the skill.
		if t := sk.Skill.Contract.Target; t != "" && sk.Skill.Contract.Tool(t).IsWrite() && slices.Contains(sk.Skill.ToolNames, t) {
			if err := r.store.SetTarget(n.ID, t, false); err != nil {
				return Exit{}, fmt.Errorf("loop: %w", err)
			}
		}
	}
	// A node run again after its process stopped mid-turn: its last
	// calls are answered as interrupted before the model reads on.
	if err := r.closeInterrupted(n); err != nil {
		return Exit{}, err
	}
	c := &Counter{Limit: r.cfg.NoProgressLimit, MaxRounds: r.cfg.MaxRounds, Stalls: n.Stalls, Rounds: n.Rounds}
	for {
		if err := ctx.Err(); err != nil {
			return Exit{}, fmt.Errorf("loop: node %s: %w", n.ID, err)
		}
		// A write whose outcome is unknown is settled before the model
		// goes on (§14.3): verified, or asked.
		if exit, done, err := r.settleUncertain(ctx, n.ID, sk); err != nil || done {
			return exit, err
		}
		if !c.Turn() {
			return r.fail(n, c, r.text(txtMaxRounds, fmt.Sprint(r.cfg.MaxRounds)))
		}
		exit, done, err := r.turn(ctx, n.ID, sk, c)
		if err != nil || done {
			return exit, err
		}
		if err := r.store.SetProgress(n.ID, c.Stalls, c.Rounds); err != nil {
			return Exit{}, fmt.Errorf("loop: %w", err)
		}
		if c.Exhausted() {
			return r.fail(n, c, r.text(txtNoProgress, fmt.Sprint(c.Stalls)))
		}
	}
}

// fail ends a node the loop gave up on.
func (r *Runner) fail(n state.Node, c *Counter, reason string) (Exit, error) {
	if err := r.store.SetProgress(n.ID, c.Stalls, c.Rounds); err != nil {
		return Exit{}, fmt.Errorf("loop: %w", err)
	}
	if err := r.store.SetNodeStatus(n.ID, state.Failed, reason); err != nil {
		return Exit{}, fmt.Errorf("loop: %w", err)
	}
	r.emit(n, Event{Kind: KindNode, Status: string(state.Failed), Message: reason, Stalls: c.Stalls, Level: "WARN"})
	n.Status, n.Reason, n.Suspension = state.Failed, reason, nil
	return exitOf(n), nil
}

// turn plays one model turn. done reports that the node left the loop.
func (r *Runner) turn(ctx context.Context, nodeID string, sk Skill, c *Counter) (Exit, bool, error) {
	n, err := r.store.Node(nodeID)
	if err != nil {
		return Exit{}, true, fmt.Errorf("loop: %w", err)
	}
	cat, err := r.catalog(n, sk)
	if err != nil {
		return Exit{}, true, err
	}
	req, err := r.modelRequest(n, sk, cat, c)
	if err != nil {
		return Exit{}, true, err
	}
	resp, err := r.model.Complete(ctx, req)
	if err != nil {
		return Exit{}, true, fmt.Errorf("loop: node %s: %w: %w", n.ID, ErrModel, err)
	}
	if u := resp.Usage; u != (model.Usage{}) {
		// Only what the provider reported: a model without usage (the
		// scripted one) leaves the trace as it was.
		r.emit(n, Event{Kind: KindModel, Status: "usage", Stalls: c.Stalls, Finish: string(resp.FinishReason),
			PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, CachedTokens: u.CachedTokens})
	}
	msg := resp.Message
	msg.Role = model.RoleAssistant
	if msg.Content == "" && len(msg.ToolCalls) == 0 && resp.Refusal != "" {
		// The refusal is what the model said: it stays in the conversation.
		msg.Content = resp.Refusal
	}
	if detail := r.malformedTurn(msg.ToolCalls); detail != "" {
		return Exit{}, false, r.refuseTurn(n, msg, c, detail)
	}
	if err := r.store.AppendMessages(n.ID, msg); err != nil {
		return Exit{}, true, fmt.Errorf("loop: %w", err)
	}
	switch {
	case resp.FinishReason == model.FinishLength:
		// A turn cut by the length limit counts as a no-progress text turn
		// (§6); its tool calls may be half-formed, so none of them runs:
		// each is answered, so that the conversation stays well formed.
		c.TextOnly()
		r.emit(n, Event{Kind: KindReact, Status: "length", Message: r.text(txtLengthReason), Stalls: c.Stalls, Level: "WARN"})
		for _, tc := range msg.ToolCalls {
			if err := r.unrun(n, tc, c, r.lengthCut()); err != nil {
				return Exit{}, true, err
			}
		}
		if len(msg.ToolCalls) == 0 {
			return Exit{}, false, r.nudge(n, txtLengthTurn)
		}
		return Exit{}, false, nil
	case resp.Refusal != "" && len(msg.ToolCalls) == 0:
		c.TextOnly()
		r.emit(n, Event{Kind: KindReact, Status: "refusal", Message: r.text(txtRefusal, resp.Refusal), Stalls: c.Stalls, Level: "WARN"})
		return Exit{}, false, r.nudge(n, txtRefusedTurn)
	case len(msg.ToolCalls) == 0:
		c.TextOnly()
		r.emit(n, Event{Kind: KindReact, Status: "no_tool_calls", Message: msg.Content, Stalls: c.Stalls})
		return Exit{}, false, r.nudge(n, txtNoToolCall)
	}
	return r.runCalls(ctx, n, sk, cat, msg.ToolCalls, c)
}

// modelRequest builds the turn's request to the model: the prompt with its
// hints, the catalog's tools and the node's conversation, fitted to the
// context window (the trace says what the fitting did).
func (r *Runner) modelRequest(n state.Node, sk Skill, cat *catalog.Catalog, c *Counter) (model.Request, error) {
	history, err := r.store.Messages(n.ID)
	if err != nil {
		return model.Request{}, fmt.Errorf("loop: %w", err)
	}
	if k := len(history); k > 0 && history[k-1].Role == model.RoleAssistant && len(history[k-1].ToolCalls) == 0 {
		// A text turn left unanswered (the process stopped right after
		// it): answered now, so the request does not end with it.
		if err := r.nudge(n, txtNoToolCall); err != nil {
			return model.Request{}, err
		}
		if history, err = r.store.Messages(n.ID); err != nil {
			return model.Request{}, fmt.Errorf("loop: %w", err)
		}
	}
	in := PromptInput{Locale: r.cfg.Locale, Agent: r.agent, Manual: sk.Skill.Profile.SkillManual,
		Catalog: cat.Prompt(r.cfg.Locale), Phase: PhaseHint(sk.Skill.Contract, n.Outputs, r.cfg.Locale),
		Inputs: InputsHint(sk.Skill.Contract, n.Inputs, r.cfg.Locale)}
	if failed, _ := r.reflect.Load(n.ID); r.cfg.Reflect && failed == true {
		in.Reflect = ReflectHint(r.cfg.Locale)
	}
	var tools []model.Tool
	for _, d := range cat.Definitions() {
		tools = append(tools, model.Tool{Name: d.Name, Description: d.Description, Parameters: d.InputSchema})
	}
	req, fit := r.request(in, tools, history)
	if fit.Compacted > 0 || fit.Over || len(fit.Shortened) > 0 {
		e := Event{Kind: KindReact, Status: "context", Message: fit.String(), Stalls: c.Stalls}
		if fit.Over {
			e.Level = "WARN"
		}
		r.emit(n, e)
	}
	return req, nil
}

// runCalls runs a turn's tool calls in order, until one ends the turn (the
// rest are answered as skipped) or the node leaves the loop (done).
func (r *Runner) runCalls(ctx context.Context, n state.Node, sk Skill, cat *catalog.Catalog, calls []model.ToolCall, c *Counter) (Exit, bool, error) {
	skip := false
	for i, tc := range calls {
		if skip {
			if err := r.skipped(n, tc, c); err != nil {
				return Exit{}, true, err
			}
			continue
		}
		cctx, span := startToolSpan(ctx, n, tc.Name, tc.ID)
		cr, err := r.call(cctx, n, sk, cat, tc)
		obs := cr.Observation
		spanGuards(span, cr.Trace)
		endToolSpan(span, obs, err)
		if err != nil {
			return Exit{}, true, err
		}
		r.reflect.Store(n.ID, obs.Outcome != abi.OutcomeSuccess)
		sent := r.toolMessage(cr)
		if err := r.store.AppendMessages(n.ID, model.Message{Role: model.RoleTool, ToolCallID: tc.ID, Content: sent}); err != nil {
			return Exit{}, true, fmt.Errorf("loop: %w", err)
		}
		after, err := r.store.Node(n.ID)
		if err != nil {
			return Exit{}, true, fmt.Errorf("loop: %w", err)
		}
		delegated := len(after.Delegations) > len(n.Delegations)
		exited := after.Status != state.Running || delegated
		for _, e := range policyEvents(tc.Name, tc.ID, cr.Trace, c.Stalls) {
			r.emit(n, e)
		}
		step := c.AfterCall(obs.Outcome, exited, tc.Name == toolFinish && obs.Outcome != abi.OutcomeSuccess)
		r.emit(n, withGuards(decidedBy(withSent(withCall(toolEvent(Event{Tool: tc.Name, Stalls: c.Stalls, Status: string(after.Status)}, obs), tc.ID, tc.Arguments), sent, cr.Evidence), cr.Decider), cr.Trace))
		switch step {
		case StepNextTurn:
			skip = true
		case StepExit:
			for _, rest := range calls[i+1:] {
				if err := r.skipped(n, rest, c); err != nil {
					return Exit{}, true, err
				}
			}
			if err := r.store.SetProgress(n.ID, c.Stalls, c.Rounds); err != nil {
				return Exit{}, true, fmt.Errorf("loop: %w", err)
			}
			return r.exited(after, delegated), true, nil
		}
		n = after
	}
	return Exit{}, false, nil
}

// nudge answers a turn without a tool call with a user-role message that
// says what happened and what is expected (TOOL_OBSERVATION §7.1), so that
// the next request ends with a user message, as every provider accepts
// (some refuse a conversation that ends with the assistant's), and is not
// the same context replayed. The turn was counted as no progress (§6).
func (r *Runner) nudge(n state.Node, reason textID) error {
	if err := r.store.AppendMessages(n.ID, model.Message{Role: model.RoleUser, Content: r.text(txtNextToolCall, r.text(reason))}); err != nil {
		return fmt.Errorf("loop: %w", err)
	}
	return nil
}

// exited reports how a control builtin took the node out of the loop.
func (r *Runner) exited(n state.Node, delegated bool) Exit {
	e := exitOf(n)
	switch {
	case delegated:
		d := n.Delegations[len(n.Delegations)-1]
		e.Delegation = &d
	case n.Status == state.Suspended:
		s := n.Suspension
		r.emit(n, Event{Kind: KindSuspend, Tool: s.Tool, Status: s.Kind, Message: s.Question, Stalls: n.Stalls})
	default:
		level := "INFO"
		if n.Status == state.Failed {
			level = "WARN"
		}
		msg := n.Output
		if msg == "" {
			msg = n.Reason
		}
		r.emit(n, Event{Kind: KindNode, Status: string(n.Status), Message: msg, Stalls: n.Stalls, Level: level})
	}
	return e
}

// skipped answers a call skipped with the rest of its wave, so that every
// call of the assistant message has its tool message.
func (r *Runner) skipped(n state.Node, tc model.ToolCall, c *Counter) error {
	l := r.cfg.Locale
	o := abi.Rejected(abi.CallSkipped, abi.CallSkipped.Reason(l), abi.NextDecideAgain.Text(l))
	o.Locale = l
	return r.unrun(n, tc, c, o)
}

// lengthCut is the answer to a call of a turn cut by the length limit.
func (r *Runner) lengthCut() abi.Observation {
	l := r.cfg.Locale
	o := abi.Rejected(abi.ModelOutputTruncated, abi.ModelOutputTruncated.Reason(l), abi.NextReissueShorter.Text(l))
	o.Locale = l
	return o
}

// unrun answers a call the loop did not run with o. It neither counts nor
// resets (the turn was counted as a whole); its event says SKIPPED.
func (r *Runner) unrun(n state.Node, tc model.ToolCall, c *Counter, o abi.Observation) error {
	text := r.toolMessage(callResult{Observation: o})
	if err := r.store.AppendMessages(n.ID, model.Message{Role: model.RoleTool, ToolCallID: tc.ID, Content: text}); err != nil {
		return fmt.Errorf("loop: %w", err)
	}
	e := withSent(withCall(toolEvent(Event{Tool: tc.Name, Stalls: c.Stalls}, o), tc.ID, tc.Arguments), text, nil)
	e.Status = "SKIPPED"
	r.emit(n, e)
	return nil
}

// malformedTurn says what is wrong with a turn's tool calls, "" when
// nothing is: a call without an id, or an id used by more than one call
// (a tool message could not say which call it answers, and the provider
// refuses the conversation after it).
func (r *Runner) malformedTurn(calls []model.ToolCall) string {
	if len(calls) == 0 {
		return ""
	}
	names := map[string][]string{}
	var order []string
	var problems []string
	en := r.cfg.Locale == abi.LocaleEN
	for i, tc := range calls {
		if tc.ID == "" {
			if en {
				problems = append(problems, fmt.Sprintf("call %d (%s) has no id", i+1, tc.Name))
			} else {
				problems = append(problems, fmt.Sprintf("第 %d 个调用（%s）没有调用 id", i+1, tc.Name))
			}
			continue
		}
		if names[tc.ID] == nil {
			order = append(order, tc.ID)
		}
		names[tc.ID] = append(names[tc.ID], tc.Name)
	}
	for _, id := range order {
		if k := len(names[id]); k > 1 {
			if en {
				problems = append(problems, fmt.Sprintf("call id %q is used by %d calls (%s)", id, k, strings.Join(names[id], ", ")))
			} else {
				problems = append(problems, fmt.Sprintf("调用 id %q 被 %d 个调用共用（%s）", id, k, strings.Join(names[id], "、")))
			}
		}
	}
	if en {
		return strings.Join(problems, "; ")
	}
	return strings.Join(problems, "；")
}

// refuseTurn refuses a malformed turn before any of its calls runs
// (TOOL_USE_RELIABILITY §2.2: a call that fails validation is not run): it
// is REJECTED MODEL_TURN_INVALID, one no-progress turn (TOOL_OBSERVATION
// §3, §6). The conversation keeps the turn's text and the first call of
// each id, exactly as the model sent them, each answered with the
// refusal (a TOOL event SKIPPED each); a repeated call or one without an
// id is left out of it (a provider refuses a conversation with them) and
// named in the refusal, which the turn's REACT event invalid_turn carries.
func (r *Runner) refuseTurn(n state.Node, msg model.Message, c *Counter, detail string) error {
	l := r.cfg.Locale
	o := abi.Rejected(abi.ModelTurnInvalid, abi.ModelTurnInvalid.Reason(l, "detail", detail), abi.NextDistinctCalls.Text(l))
	o.Locale = l
	kept := msg
	kept.ToolCalls = nil
	seen := map[string]bool{}
	for _, tc := range msg.ToolCalls {
		if tc.ID != "" && !seen[tc.ID] {
			seen[tc.ID] = true
			kept.ToolCalls = append(kept.ToolCalls, tc)
		}
	}
	if kept.Content != "" || len(kept.ToolCalls) > 0 {
		// (An assistant message with nothing in it is refused by some
		// providers; it is left out.)
		if err := r.store.AppendMessages(n.ID, kept); err != nil {
			return fmt.Errorf("loop: %w", err)
		}
	}
	c.TextOnly()
	r.emit(n, Event{Kind: KindReact, Status: "invalid_turn", Message: o.Message(), Stalls: c.Stalls, Level: "WARN"})
	for _, tc := range kept.ToolCalls {
		if err := r.unrun(n, tc, c, o); err != nil {
			return err
		}
	}
	if len(kept.ToolCalls) == 0 {
		// Nothing answers the turn: the refusal does, as the user's.
		if err := r.store.AppendMessages(n.ID, model.Message{Role: model.RoleUser, Content: r.toolMessage(callResult{Observation: o})}); err != nil {
			return fmt.Errorf("loop: %w", err)
		}
	}
	return nil
}

// callResult is one call's observation with what its tool message is
// rendered from.
type callResult struct {
	Observation abi.Observation
	Evidence    *abi.EvidenceItem
	Response    json.RawMessage
	// Builtin: the answer of a builtin, which bounds its own data
	// (builtin_evidence_get pages by pageSize); it is not cut again.
	Builtin bool
	// Decider is the guard step that decided a business call's
	// observation, or a builtin's plugin; Trace the call's guard steps.
	Decider *chain.Step
	Trace   []chain.Step
}

// toolMessage renders the tool message the model reads for a call.
func (r *Runner) toolMessage(cr callResult) string {
	budget := r.cfg.ToolResultBudget
	if cr.Builtin {
		budget = 0
	}
	return ToolMessage(ToolMessageInput{Observation: cr.Observation, Evidence: cr.Evidence, Response: cr.Response,
		Budget: budget, Locale: r.cfg.Locale})
}

// catalog builds the node's tool catalog from its state now.
func (r *Runner) catalog(n state.Node, sk Skill) (*catalog.Catalog, error) {
	cat, err := catalog.New(catalog.Input{
		Builtins: r.manifests, Contract: sk.Skill.Contract, ToolNames: sk.Skill.ToolNames, Business: sk.defs(),
		Node: catalog.Node{
			WriteGated:        n.Gated != nil,
			DelegatableSkills: n.Delegatable,
			Depth:             n.Depth,
			MaxDepth:          r.cfg.DelegateMaxDepth,
			OutputsUsed:       catalog.OutputsUsed(sk.Skill.Contract, n.HasDependents),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("loop: node %s: %w", n.ID, err)
	}
	return cat, nil
}

// call runs one tool call and applies its effects.
func (r *Runner) call(ctx context.Context, n state.Node, sk Skill, cat *catalog.Catalog, tc model.ToolCall) (callResult, error) {
	views, err := r.store.Views(n.ID)
	if err != nil {
		return callResult{}, fmt.Errorf("loop: %w", err)
	}
	visible := cat.Business()
	for _, d := range cat.Definitions() {
		if !slices.Contains(visible, d.Name) {
			visible = append(visible, d.Name)
		}
	}
	views[string(abi.CapStateCatalog)], _ = json.Marshal(abi.CatalogView{Tools: visible})
	l := r.cfg.Locale
	if plugin := cat.Plugin(tc.Name); plugin != "" {
		b := r.builtins[plugin]
		req := &abi.Request{Tool: tc.Name, CallID: tc.ID, State: views, Locale: l}
		if json.Valid([]byte(tc.Arguments)) {
			req.Args = json.RawMessage(tc.Arguments)
		} else {
			req.ArgsText = tc.Arguments
		}
		v := b.Builtin(ctx, r.cfg.Tenant, req)
		by := builtinStep(b)
		if v.Observation == nil {
			o := abi.Failed(abi.PluginContractViolation, abi.PluginContractViolation.Reason(l, "plugin", plugin, "detail", "no observation"),
				abi.NextReportFailure.Text(l))
			o.Locale = l
			return callResult{Observation: o, Builtin: true, Decider: by}, nil
		}
		obs := *v.Observation
		if obs.Outcome == abi.OutcomeSuccess {
			if err := r.store.Apply(n.ID, v.Effects); err != nil {
				return callResult{}, fmt.Errorf("loop: %s: %w", tc.Name, err)
			}
		}
		return callResult{Observation: obs, Builtin: true, Decider: by}, nil
	}
	res := r.business(ctx, n, sk, cat, tc.ID, tc.Name, []byte(tc.Arguments), views)
	if res.Err != nil {
		return callResult{}, fmt.Errorf("loop: %s: %w", tc.Name, res.Err)
	}
	if err := r.store.Apply(n.ID, res.Effects); err != nil {
		return callResult{}, fmt.Errorf("loop: %s: %w", tc.Name, err)
	}
	obs := res.Observation
	if obs.Outcome == abi.OutcomeDeferred && obs.Code == abi.ApprovalRequired {
		if err := r.store.Gate(n.ID, tc.Name, tc.ID, res.Args); err != nil {
			return callResult{}, fmt.Errorf("loop: %w", err)
		}
	}
	if t := sk.Skill.Contract.Tool(tc.Name); t.IsWrite() && n.Target == "" && cat.Visible(tc.Name) {
		// §10.1 order 3: the first write call claims the target.
		if err := r.store.SetTarget(n.ID, tc.Name, true); err != nil {
			return callResult{}, fmt.Errorf("loop: %w", err)
		}
	}
	return callResult{Observation: obs, Evidence: evidenceOf(res.Effects), Response: res.Response, Decider: res.Decider, Trace: res.Trace}, nil
}

// builtinStep names the builtin plugin that answered a call, for its TOOL
// event: its name@version and slot generation when it says (see
// chain.Identified), else its manifest's name@version.
func builtinStep(b Builtin) *chain.Step {
	s := &chain.Step{}
	if id, ok := b.(chain.Identified); ok {
		s.Plugin, s.Generation = id.Identity()
	}
	if s.Plugin == "" {
		m := b.Manifest()
		s.Plugin = m.Name + "@" + m.Version
	}
	return s
}

// commit makes what the before guards decided durable before the tool is
// called: a write's bound arguments (for its verification should its
// outcome be unknown) and its ledger entry, STARTED (§14.3). A crash
// during the call leaves both for recovery.
func (r *Runner) commit(n state.Node, sk Skill, callID, tool string) func([]abi.Effect, json.RawMessage) error {
	return func(effects []abi.Effect, args json.RawMessage) error {
		if sk.Skill.Contract.Tool(tool).IsWrite() {
			if err := r.store.RecordCall(n.TaskID, callID, args); err != nil {
				return err
			}
		}
		if len(effects) == 0 {
			return nil
		}
		return r.store.Apply(n.ID, r.stampStart(effects))
	}
}

// stampStart sets the start of each ledger reservation to the runner's
// clock, now, just before the tool is called: a negative verification of
// the write is conclusive only once its call could have finished (see
// VerifyNode). A payload that does not decode is left for the store to
// refuse.
func (r *Runner) stampStart(effects []abi.Effect) []abi.Effect {
	out, cloned := effects, false
	for i, e := range effects {
		if e.Kind != abi.EffectLedgerReserve {
			continue
		}
		var p abi.LedgerReserve
		if json.Unmarshal(e.Payload, &p) != nil {
			continue
		}
		p.StartedAt = r.cfg.Now().UTC().Format(time.RFC3339Nano)
		b, err := json.Marshal(p)
		if err != nil {
			continue
		}
		if !cloned {
			out, cloned = slices.Clone(effects), true
		}
		out[i].Payload = b
	}
	return out
}

// business runs a business call through the skill's chain, limited to the
// node's catalog.
func (r *Runner) business(ctx context.Context, n state.Node, sk Skill, cat *catalog.Catalog, callID, tool string, args []byte, views map[string]json.RawMessage) chain.Result {
	ch := *sk.Chain
	ch.Visible = cat.Visible
	call := chain.Call{Tenant: r.cfg.Tenant, CallID: callID, Tool: tool, Args: args, State: views, Locale: r.cfg.Locale,
		ToolContract: sk.Skill.Contract.Tool(tool), Contract: toolContract(n.Contract, tool), Commit: r.commit(n, sk, callID, tool)}
	for _, d := range sk.defs() {
		if d.Name == tool {
			call.Schema = d.InputSchema
		}
	}
	return ch.Run(ctx, call)
}

// toolContract returns tools.<tool> of a contract's JSON, or nil.
func toolContract(c json.RawMessage, tool string) json.RawMessage {
	var doc struct {
		Tools map[string]json.RawMessage `json:"tools"`
	}
	if len(c) == 0 || json.Unmarshal(c, &doc) != nil {
		return nil
	}
	return withoutVerify(doc.Tools[tool])
}

// withoutVerify drops verify from a tool's contract: verification is the
// loop's (§14.3), no guard reads it, and it names another tool that a
// guard's one-tool view of the contract cannot resolve.
func withoutVerify(t json.RawMessage) json.RawMessage {
	var fields map[string]json.RawMessage
	if json.Unmarshal(t, &fields) != nil {
		return t
	}
	if _, ok := fields["verify"]; !ok {
		return t
	}
	delete(fields, "verify")
	b, err := json.Marshal(fields)
	if err != nil {
		return t
	}
	return b
}

const toolFinish = "builtin_node_finish"
