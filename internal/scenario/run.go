package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/catalog"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/firstparty"
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/internal/skillstore"
	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/internal/tools"
	tscripted "github.com/agentwarden/warden/internal/tools/scripted"
	"github.com/agentwarden/warden/loop"
)

// Clock is where every scenario's clock starts, so traces and approval
// times are the same on every run.
var Clock = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// Options say how to run a scenario.
type Options struct {
	// Native runs the first-party guards and builtins in-process, for
	// debugging and benchmarks. By default they run as wasm through the
	// host: the modules of Plugins, or of firstparty.Load when it is nil.
	Native bool
	// Plugins are the first-party wasm modules.
	Plugins *firstparty.Set
	// CacheDir is the host's compilation cache, shared across processes;
	// empty keeps compiled code in memory. The first scenario of a
	// process that runs wasm fixes it for the others.
	CacheDir string
	// Model replaces the scripted turns with a real model; the scenario's
	// expectations are then not checked (Report.Unchecked).
	Model model.Model
	// Sink also receives every trace event as it happens.
	Sink loop.Sink
	// Installed, when set, is told each of the scenario's own modules
	// (plugins) as it is installed, so a trace names the exact modules
	// that decided.
	Installed func(PluginInfo)
}

// Report is what a run came to.
type Report struct {
	Name string
	File string
	// Pending is the scenario's pending reason; a pending scenario is
	// skipped, never passed.
	Pending string
	// Unchecked: a real model played, so expectations were not checked.
	Unchecked bool
	Status    state.Status
	Task      state.Status
	Events    []loop.Event
	// Graph is the nodes of a task scenario's tasks (see GraphNode).
	Graph []GraphNode
	// Mismatches lists every expectation that did not hold.
	Mismatches []string
	// Err is the error the run stopped on (the model's, the loop's or the
	// store's), nil when the node came to an exit. It is set with a real
	// model too, whose expectations are not checked: such a run failed.
	Err      error
	Duration time.Duration
}

// Skipped reports a pending scenario.
func (r Report) Skipped() bool { return r.Pending != "" }

// Passed reports a scenario that ran, without a run error, and met every
// expectation.
func (r Report) Passed() bool { return !r.Skipped() && len(r.Mismatches) == 0 && r.Err == nil }

const (
	sessionID = "s1"
	taskID    = "t1"
	nodeID    = "n1"
)

// Run runs a scenario and checks its expectations. The error is the setup
// failing (tools, plugins); an expectation that does not hold, including a
// model script that diverged, is a mismatch in the report.
func Run(ctx context.Context, s Scenario, o Options) (rep Report, err error) {
	rep = Report{Name: s.Name, File: s.File, Pending: s.Pending, Unchecked: o.Model != nil}
	if s.Pending != "" {
		return rep, nil
	}
	start := time.Now()
	defer func() { rep.Duration = time.Since(start) }()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	clock, advance := scenarioClock()

	ts, err := setupTools(ctx, s)
	if err != nil {
		return rep, err
	}
	defer ts.close()
	guards, builtins, tp, err := setupPlugins(ctx, s, o, clock)
	if err != nil {
		return rep, err
	}
	defer tp.close()
	inv, sleeps := newInvoker(s, ts.rt)
	ls, err := loadSkills(ctx, s, ts, tp, guards, inv)
	if err != nil {
		return rep, err
	}
	tp = ls.tp
	if miss := checkLoad(s.Expect.Load, ls.refused); len(miss) > 0 || ls.runContract == nil {
		if ls.runContract == nil && o.Model == nil {
			// The node's skill was refused: nothing runs.
			rep.Mismatches = append(miss, tp.checkInstall(s.Expect.Install)...)
			return rep, nil
		}
		if ls.runContract == nil {
			return rep, fmt.Errorf("scenario %s: %w: the node's skill was refused at load", s.Name, ErrInvalidScenario)
		}
		defer func() { rep.Mismatches = append(miss, rep.Mismatches...) }()
	}
	st, err := newStore(s, ls, clock)
	if err != nil {
		return rep, err
	}
	r, err := newRunner(s, o, st, ls.skills, builtins, clock)
	if err != nil {
		return rep, err
	}
	if s.Task != nil {
		if err := seedSession(st, s.State); err != nil {
			return rep, fmt.Errorf("scenario %s: %w: %w", s.Name, ErrSetup, err)
		}
		return runTasks(ctx, s, o, rep, r.runner, st, r.rec, r.script, r.prompts, ts.local, tp, &sleeps.d, advance)
	}
	miss, err := driveNode(ctx, s, r.runner, st, advance)
	return finishNode(s, o, rep, miss, err, st, r, ts.local, tp, sleeps.d)
}

// scenarioClock is a scenario's clock, at Clock until a reply's "after"
// advances it.
func scenarioClock() (clock func() time.Time, advance func(time.Duration)) {
	now := Clock
	var mu sync.Mutex
	clock = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance = func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	return clock, advance
}

// toolSet is a scenario's business tools: the scripted ones and those the
// MCP servers serve, routed by name.
type toolSet struct {
	rt     *router
	local  *tscripted.Server
	defs   map[string]catalog.BusinessTool
	served []tools.Tool // by the MCP servers
	close  func()
}

// setupTools starts the scenario's scripted tools and connects its MCP
// servers.
func setupTools(ctx context.Context, s Scenario) (*toolSet, error) {
	local := scriptedServer(s.Tools.Scripted)
	ts := &toolSet{rt: &router{scripted: map[string]bool{}, local: local}, local: local,
		defs: map[string]catalog.BusinessTool{}, close: func() {}}
	for _, t := range s.Tools.Scripted {
		ts.rt.scripted[t.Name] = true
	}
	if s.Tools.MCP != nil || len(s.Tools.MCPServers) > 0 {
		c, err := dialMCP(ctx, s.Tools, s.File)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w: mcp: %w", s.Name, ErrSetup, err)
		}
		ts.rt.remote = c
		served, err := c.ListTools(ctx)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("scenario %s: %w: mcp: %w", s.Name, ErrSetup, err)
		}
		for _, t := range served {
			ts.defs[t.Name] = catalog.BusinessTool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema}
		}
		ts.served, ts.close = served, func() { c.Close() }
	}
	lts, _ := local.ListTools(ctx)
	for _, t := range lts {
		ts.defs[t.Name] = catalog.BusinessTool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema}
	}
	return ts, nil
}

// setupPlugins loads the first-party plugins and installs the scenario's
// own (tp is nil without them); its builtins join the first-party ones.
func setupPlugins(ctx context.Context, s Scenario, o Options, clock func() time.Time) (map[string]chain.Guard, []loop.Builtin, *tenantPlugins, error) {
	guards, builtins, _, err := firstPartyPlugins(ctx, o, clock)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("scenario %s: %w: %w", s.Name, ErrSetup, err)
	}
	if len(s.Plugins) == 0 {
		return guards, builtins, nil, nil
	}
	h, err := tenantHost(o.CacheDir)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("scenario %s: %w: %w", s.Name, ErrSetup, err)
	}
	tp, err := installPlugins(ctx, s, h, o.Installed)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("scenario %s: %w: %w", s.Name, ErrSetup, err)
	}
	return guards, append(slices.Clip(builtins), tp.builtins...), tp, nil
}

// sleepLog is the backoff sleeps the invoker took, in order.
type sleepLog struct {
	mu sync.Mutex
	d  []time.Duration
}

// newInvoker is the scenario's tool invoker: its timeout, and its backoff
// sleeps recorded rather than slept unless the scenario asks for real ones.
func newInvoker(s Scenario, rt *router) (*chain.Invoker, *sleepLog) {
	sleeps := &sleepLog{}
	inv := &chain.Invoker{Caller: rt}
	if d := s.Config.ToolTimeout; d != "" {
		inv.DefaultTimeout, _ = time.ParseDuration(d)
	}
	if !s.Config.RealBackoff {
		inv.Sleep = func(ctx context.Context, d time.Duration) error {
			sleeps.mu.Lock()
			sleeps.d = append(sleeps.d, d)
			sleeps.mu.Unlock()
			return ctx.Err()
		}
	}
	return inv, sleeps
}

// loadedSkills is what loading a scenario's skills gives: the skills that
// loaded, the node's skill, those refused as the scenario expects, and the
// tenant plugins their guards attached to.
type loadedSkills struct {
	skills      []loop.Skill
	run         Skill
	runContract *contract.Contract
	refused     map[string][]*contract.LoadError
	tp          *tenantPlugins
}

// loadSkills loads each skill as a deployment does: its contract, its
// tenant guards, its chain and its tools. A skill refused as the scenario
// expects is dropped; any other refusal is an invalid scenario.
func loadSkills(ctx context.Context, s Scenario, ts *toolSet, tp *tenantPlugins, guards map[string]chain.Guard, inv *chain.Invoker) (*loadedSkills, error) {
	ls := &loadedSkills{refused: map[string][]*contract.LoadError{}, tp: tp}
	for i, sk := range s.Skills {
		parsed, _, err := contract.Parse(sk.SkillKey, sk.Contract)
		var ve *contract.ValidationError
		if err != nil && errors.As(err, &ve) && s.Expect.refusesLoad(sk.SkillKey) {
			// Refused as the scenario expects: the skill is dropped.
			ls.refused[sk.SkillKey] = ve.Problems
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w: skill %s: %w", s.Name, ErrInvalidScenario, sk.SkillKey, err)
		}
		// The skill's tenant guards resolve against the scenario's plugins;
		// one that does not is a load error of the skill, never ignored.
		var placements []chain.Placement
		if len(parsed.Guards) > 0 {
			var problems []*contract.LoadError
			if ls.tp == nil {
				ls.tp = &tenantPlugins{reg: &chain.Registry{}}
			}
			placements, problems = ls.tp.reg.Attach(ctx, tenant, sk.SkillKey, parsed.Guards)
			if len(problems) > 0 && s.Expect.refusesLoad(sk.SkillKey) {
				ls.refused[sk.SkillKey] = problems
				continue
			}
			if len(problems) > 0 {
				err := &contract.ValidationError{SkillKey: sk.SkillKey, Problems: problems}
				return nil, fmt.Errorf("scenario %s: %w: skill %s: %w", s.Name, ErrInvalidScenario, sk.SkillKey, err)
			}
		}
		ch, err := chain.New(guards, placements, inv)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w: %w", s.Name, ErrSetup, err)
		}
		var bts []catalog.BusinessTool
		for _, n := range sk.ToolNames {
			d, ok := ts.defs[n]
			if !ok && ts.rt.remote == nil {
				return nil, fmt.Errorf("scenario %s: %w: skill %s: tool %s is neither scripted nor served", s.Name, ErrInvalidScenario, sk.SkillKey, n)
			}
			if ok {
				bts = append(bts, d) // else an MCP server may add it later
			}
		}
		// A served tool the contract is silent about is a write when its
		// annotations say so, as in a deployment.
		loaded, _, err := tools.ApplyHints(&skillstore.Skill{Profile: contract.SkillProfile{SkillKey: sk.SkillKey,
			SkillName: sk.SkillName, SkillManual: sk.Manual, SkillContract: string(sk.Contract)}, Contract: parsed, ToolNames: sk.ToolNames}, ts.served)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w: skill %s: %w", s.Name, ErrInvalidScenario, sk.SkillKey, err)
		}
		sk.Contract = json.RawMessage(loaded.Profile.SkillContract)
		ls.skills = append(ls.skills, loop.Skill{Skill: loaded, Chain: ch, Tools: bts, Live: liveDefs(ts.rt, loaded, ts.served)})
		if (s.Skill == "" && i == 0) || s.Skill == sk.SkillKey {
			ls.run, ls.runContract = sk, loaded.Contract
		}
	}
	return ls, nil
}

// newStore is the session's store; a node scenario's task and node are
// created in it, seeded with the scenario's state and the user's message.
func newStore(s Scenario, ls *loadedSkills, clock func() time.Time) (*state.Memory, error) {
	st, err := state.NewMemory(state.Options{SessionID: sessionID, Now: clock,
		BypassTools: s.Config.WriteConfirmBypassTools, ReservedKeys: s.Config.ReservedKeys,
		FingerprintLimit: s.Config.FingerprintLimit, RepeatTools: s.Config.RepeatTools})
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w: %w", s.Name, ErrSetup, err)
	}
	if s.Task != nil {
		return st, nil
	}
	var keys []string
	for _, sk := range s.Skills {
		if ls.refused[sk.SkillKey] == nil {
			keys = append(keys, sk.SkillKey)
		}
	}
	run := ls.run
	for _, err := range []error{
		st.CreateTask(state.Task{ID: taskID, Objective: s.User}),
		st.CreateNode(state.Node{ID: nodeID, TaskID: taskID, SkillKey: run.SkillKey, Contract: run.Contract,
			ToolNames: run.ToolNames, Skills: keys, DelegateMaxDepth: delegateMaxDepth(s.Config), Platform: s.Platform}),
		seed(st, s.State, run, ls.runContract, Clock),
		st.AddUserMessage(s.User),
		st.AppendMessages(nodeID, model.Message{Role: model.RoleUser, Content: s.User}),
	} {
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w: %w", s.Name, ErrSetup, err)
		}
	}
	return st, nil
}

// scenarioRunner is the loop a scenario runs, with its model (the
// scenario's script unless Options.Model), its trace and its prompts.
type scenarioRunner struct {
	runner  *loop.Runner
	rec     *loop.Recorder
	prompts *promptLog
	script  *turns // nil with Options.Model
}

// newRunner makes the loop with the scenario's config.
func newRunner(s Scenario, o Options, st *state.Memory, skills []loop.Skill, builtins []loop.Builtin, clock func() time.Time) (*scenarioRunner, error) {
	r := &scenarioRunner{rec: &loop.Recorder{}}
	var sink loop.Sink = r.rec
	if o.Sink != nil {
		sink = loop.SinkFunc(func(e loop.Event) { r.rec.Emit(e); o.Sink.Emit(e) })
	}
	r.prompts = &promptLog{rec: r.rec, st: st}
	m := o.Model
	if m == nil {
		var err error
		if r.script, err = newTurns(s, st, r.rec); err != nil {
			return nil, fmt.Errorf("scenario %s: %w: %w", s.Name, ErrSetup, err)
		}
		m = r.script
	}
	cfg := loop.DefaultConfig()
	cfg.Locale, cfg.Tenant, cfg.Now = abi.LocaleZH, "scenario", clock
	if s.Locale == "en" {
		cfg.Locale = abi.LocaleEN
	}
	if s.Config.NoProgressLimit > 0 {
		cfg.NoProgressLimit = s.Config.NoProgressLimit
	}
	if s.Config.MaxRounds > 0 {
		cfg.MaxRounds = s.Config.MaxRounds
	}
	if d := s.Config.ReconfirmAfter; d != "" {
		cfg.ReconfirmAfter, _ = time.ParseDuration(d)
	}
	cfg.DelegateMaxDepth = delegateMaxDepth(s.Config)
	var err error
	r.runner, err = loop.New(loop.Options{Model: r.prompts.wrap(m), Store: st, Agent: s.Agent, Skills: skills,
		Builtins: builtins, Sink: sink, Config: cfg})
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w: %w", s.Name, ErrSetup, err)
	}
	return r, nil
}

// driveNode runs the node through its suspensions with the scripted user's
// replies. miss holds the replies that did not fit; err is the run's
// (errStop when a reply stopped it).
func driveNode(ctx context.Context, s Scenario, runner *loop.Runner, st *state.Memory, advance func(time.Duration)) (miss []string, err error) {
	exit, err := runner.Run(ctx, nodeID)
	for i := 0; err == nil; i++ {
		if exit.Delegation != nil {
			miss = append(miss, fmt.Sprintf("the node delegated to %s; scenarios run one node", exit.Delegation.SkillKey))
			break
		}
		if exit.Status != state.Suspended || exit.Suspension == nil || i >= len(s.Replies) {
			break
		}
		r := s.Replies[i]
		if d, _ := time.ParseDuration(r.After); d > 0 {
			advance(d)
		}
		switch kind := exit.Suspension.Kind; {
		case kind == abi.SuspendFollowUp && r.Answer != "":
			exit, err = runner.AnswerFollowUp(ctx, nodeID, r.Answer)
		case kind == abi.SuspendApproval && r.Decision != "":
			if len(r.HeldArgs) > 0 {
				if err = changeHeld(st, r.HeldArgs); err != nil {
					miss = append(miss, fmt.Sprintf("reply %d: %v", i+1, err))
					err = errStop
					break
				}
			}
			exit, err = runner.Approve(ctx, nodeID, loop.Decision(r.Decision))
		case kind == abi.SuspendVerify && r.Verified != "":
			exit, err = runner.AnswerVerify(ctx, nodeID, r.Verified == "yes")
		default:
			miss = append(miss, fmt.Sprintf("reply %d: the node is suspended for %s, the reply does not answer it", i+1, kind))
			err = errStop
		}
	}
	return miss, err
}

// finishNode reports a node scenario's run: its error, its trace, how the
// node and its task ended, and, with the scenario's script, every
// expectation that did not hold.
func finishNode(s Scenario, o Options, rep Report, miss []string, err error, st *state.Memory, r *scenarioRunner,
	local *tscripted.Server, tp *tenantPlugins, sleeps []time.Duration) (Report, error) {
	if err != nil && !errors.Is(err, errStop) {
		if o.Model == nil || !errors.Is(err, scripted.ErrExhausted) {
			miss = append(miss, "run: "+err.Error())
			rep.Err = err
		}
	}
	rep.Events = r.rec.Events()
	n, nerr := st.Node(nodeID)
	t, terr := st.Task(taskID)
	if nerr != nil || terr != nil {
		return rep, fmt.Errorf("scenario %s: %w", s.Name, errors.Join(nerr, terr))
	}
	if t.Status == state.Running && n.Status.Ended() {
		// The scenario's task graph is this one node: the task ends as the
		// node did, as the task runner would end a one-node plan.
		if err := st.SetTaskStatus(taskID, n.Status); err != nil {
			return rep, fmt.Errorf("scenario %s: %w", s.Name, err)
		}
		t.Status = n.Status
	}
	rep.Status, rep.Task = n.Status, t.Status
	if o.Model != nil {
		return rep, nil
	}
	if u := r.script.unplayed(); u != "" {
		miss = append(miss, u)
	}
	miss = append(miss, check(s.Expect, n, t, rep.Events, r.prompts.systems(), local, tp, sleeps)...)
	rep.Mismatches = miss
	return rep, nil
}

var errStop = errors.New("stop")

// delegateMaxDepth is state.delegate-max-depth, the loop's default unless
// the scenario sets it.
func delegateMaxDepth(c Config) int {
	if c.DelegateMaxDepth != nil {
		return *c.DelegateMaxDepth
	}
	return loop.DefaultDelegateMaxDepth
}

// changeHeld replaces the arguments of the write the node holds for
// approval, keeping its tool and call.
func changeHeld(st *state.Memory, args json.RawMessage) error {
	n, err := st.Node(nodeID)
	if err != nil {
		return err
	}
	if n.Gated == nil {
		return fmt.Errorf("held_args: the node holds no write")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, args); err != nil {
		return fmt.Errorf("held_args: %w", err)
	}
	return st.Gate(nodeID, n.Gated.Tool, n.Gated.CallID, b.Bytes())
}

// observer tells the scripted model the outcome and code of a tool
// message: the k-th tool message of the node answers the k-th TOOL event
// (the loop emits one TOOL event per tool message, in the same order).
func observer(st *state.Memory, rec *loop.Recorder) scripted.Observer {
	return func(callID string) (scripted.Observed, bool) {
		node, k := toolMessageIndex(st, rec, callID)
		if k < 0 {
			return scripted.Observed{}, false
		}
		i := -1
		for _, e := range rec.Events() {
			if e.Kind != loop.KindTool || e.Node != node {
				continue
			}
			if i++; i == k {
				return scripted.Observed{Outcome: e.Outcome, Code: e.Name, Wire: e.Code}, e.Outcome != ""
			}
		}
		return scripted.Observed{}, false
	}
}

// toolMessageIndex finds the node whose conversation holds the tool message
// answering callID, and its index among that node's tool messages; -1 when
// there is none.
func toolMessageIndex(st *state.Memory, rec *loop.Recorder, callID string) (string, int) {
	nodes := []string{nodeID}
	for _, e := range rec.Events() {
		if e.Node != "" && !slices.Contains(nodes, e.Node) {
			nodes = append(nodes, e.Node)
		}
	}
	for _, n := range nodes {
		msgs, err := st.Messages(n)
		if err != nil {
			continue
		}
		k := -1
		for _, m := range msgs {
			if m.Role != model.RoleTool {
				continue
			}
			k++
			if m.ToolCallID == callID {
				return n, k
			}
		}
	}
	return "", -1
}

// promptLog keeps the system prompt of every model request, with who
// asked (see asking).
type promptLog struct {
	mu  sync.Mutex
	sys []prompt
	rec *loop.Recorder
	st  *state.Memory
}

// prompt is one request's system prompt and the node (or planner) and
// skill that sent it.
type prompt struct {
	text, node, skill string
}

func (p *promptLog) wrap(m model.Model) model.Model { return &promptModel{m, p} }

func (p *promptLog) systems() []prompt {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.sys)
}

type promptModel struct {
	model.Model
	log *promptLog
}

func (m *promptModel) Complete(ctx context.Context, req model.Request) (model.Response, error) {
	if len(req.Messages) > 0 && req.Messages[0].Role == model.RoleSystem {
		node, skill := asking(m.log.rec, m.log.st, req)
		m.log.mu.Lock()
		m.log.sys = append(m.log.sys, prompt{req.Messages[0].Content, node, skill})
		m.log.mu.Unlock()
	}
	return m.Model.Complete(ctx, req)
}

// eventJSON is for mismatch texts.
func eventJSON(e loop.Event) string {
	b, _ := json.Marshal(e)
	return string(b)
}
