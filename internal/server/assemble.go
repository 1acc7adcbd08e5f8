package server

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/catalog"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/internal/tools"
	"github.com/agentwarden/warden/loop"
)

// open builds a session this process did not create, or no longer holds,
// from the directory: its agent as configured now, its tasks and events,
// then recovers its state store: a write left in flight is marked
// uncertain and its node waits for VERIFY (loop.Runner.Recover), never
// issued again.
func (s *Server) open(ctx context.Context, rec store.Session) (*session, error) {
	ss, err := s.assemble(ctx, rec.Tenant, rec.ID, false)
	if err != nil {
		return nil, err
	}
	ss.created = rec.Created
	docs, err := s.dir.Tasks(ctx, rec.ID)
	if err != nil {
		return nil, fmt.Errorf("server: open %s: %w", rec.ID, err)
	}
	for _, d := range docs {
		var t Task
		if err := json.Unmarshal(d.Doc, &t); err != nil {
			return nil, fmt.Errorf("server: open %s: task %s: %w", rec.ID, d.ID, err)
		}
		ss.tasks = append(ss.tasks, &t)
	}
	ss.next = len(ss.tasks)
	evs, err := s.dir.Events(ctx, rec.ID, 0)
	if err != nil {
		return nil, fmt.Errorf("server: open %s: %w", rec.ID, err)
	}
	for _, d := range evs {
		var e Event
		if err := json.Unmarshal(d.Doc, &e); err != nil {
			return nil, fmt.Errorf("server: open %s: event %d: %w", rec.ID, d.Seq, err)
		}
		ss.events = append(ss.events, e)
		ss.seq = d.Seq
	}
	marked, err := ss.runner.Recover()
	if err != nil {
		return nil, fmt.Errorf("server: open %s: %w", rec.ID, err)
	}
	for _, e := range marked {
		s.log.Warn("write left in flight marked UNKNOWN_PRE_CALL", "session", rec.ID, "node", e.NodeID, "tool", e.Tool)
		n, err := ss.store.Node(e.NodeID)
		if err != nil {
			continue
		}
		t, ok := ss.task(n.TaskID)
		if !ok || n.Status != state.Suspended {
			continue
		}
		ss.mu.Lock()
		t.Status, t.Node, t.Suspension, t.Approval = state.Suspended, n.ID, n.Suspension, ""
		ss.mu.Unlock()
		if err := ss.saveTask(ctx, t); err != nil {
			return nil, err
		}
	}
	if err := s.reconcile(ctx, ss); err != nil {
		return nil, fmt.Errorf("server: open %s: %w", rec.ID, err)
	}
	return ss, nil
}

// reconcile brings the API's view of a reopened session's waiting tasks in
// line with their nodes, for a process that died between the two: a task
// shown waiting for an approval whose node no longer waits runs on (resume
// it); a node that waits for an approval nobody can answer any more (the
// process died after the answer was taken, before the write was gated
// through) gets a new PENDING approval; a task shown waiting or running
// whose nodes have all ended is completed (complete).
func (s *Server) reconcile(ctx context.Context, ss *session) error {
	ss.mu.Lock()
	tasks := slices.Clone(ss.tasks)
	ss.mu.Unlock()
	var approvals []store.Approval
	for _, t := range tasks {
		ss.mu.Lock()
		status, node, sus := t.Status, t.Node, t.Suspension
		ss.mu.Unlock()
		if status != state.Suspended && status != state.Running {
			continue
		}
		if ended, err := s.complete(ctx, ss, t); err != nil || ended {
			if err != nil {
				return err
			}
			continue
		}
		if status != state.Suspended || node == "" {
			continue
		}
		n, err := ss.store.Node(node)
		if err != nil {
			return err
		}
		switch {
		case n.Status == state.Running:
			ss.mu.Lock()
			t.Status, t.Suspension, t.Approval = state.Running, nil, ""
			ss.mu.Unlock()
			if err := ss.saveTask(ctx, t); err != nil {
				return err
			}
		case n.Status == state.Suspended && n.Suspension != nil && n.Suspension.Kind == abi.SuspendApproval &&
			sus != nil && sus.Kind == abi.SuspendApproval:
			if approvals == nil {
				if approvals, err = s.dir.Approvals(ctx, ss.id); err != nil {
					return err
				}
			}
			if slices.ContainsFunc(approvals, func(a store.Approval) bool { return a.Node == n.ID && a.Status == "PENDING" }) {
				continue
			}
			a, err := s.hold(ctx, ss, t, loop.TaskExit{Status: state.Suspended, Node: n.ID, Suspension: n.Suspension})
			if err != nil {
				return err
			}
			s.log.Warn("approval asked again: the last one was answered but its write never ran", "session", ss.id, "task", t.ID, "approval", a.ID)
			if err := ss.saveTask(ctx, t); err != nil {
				return err
			}
		}
	}
	return nil
}

// assemble builds a session: its store, its skills with their chains, its
// model and its runner. Nothing is registered until it all succeeded.
//
// A probe (Check) keeps its state in memory: it leaves nothing in the store.
func (s *Server) assemble(ctx context.Context, tenant, id string, probe bool) (*session, error) {
	drop := func(key string, problems []string) {
		s.log.Error("skill dropped", "tenant", tenant, "session", id, "skill", key, "problems", problems)
	}
	agent, skills, builtins, labels, err := s.skills(ctx, tenant, probe, drop)
	if err != nil {
		return nil, err
	}
	cfg, so := s.settings(agent.Profile.AgentCode, id)
	var st state.Store
	if s.opt.NewStore != nil && !probe {
		st, err = s.opt.NewStore(id, so)
	} else {
		st, err = state.NewMemory(so)
	}
	if err != nil {
		return nil, fmt.Errorf("server: store: %w", err)
	}
	m, err := s.opt.NewModel(tenant, id)
	if err != nil {
		return nil, fmt.Errorf("server: model: %w", err)
	}
	ss := &session{id: id, tenant: tenant, created: s.opt.Now().UTC().Truncate(time.Millisecond), store: st, labels: labels,
		dir: s.dir, log: s.log, wake: make(chan struct{}), model: m}
	if o, ok := m.(observable); ok {
		o.SetObserver(ss.observer())
	}
	cfg.Tenant = tenant
	if cfg.Now == nil {
		cfg.Now = s.opt.Now
	}
	ss.cfg = cfg
	ss.sink = loop.SinkFunc(func(e loop.Event) { ss.emit(e) })
	if s.opt.Observe != nil {
		if more := s.opt.Observe(tenant, id); more != nil {
			ss.sink = loop.SinkFunc(func(e loop.Event) { more.Emit(ss.emit(e)) })
		}
	}
	ss.runner, err = loop.New(loop.Options{Model: m, Store: st, Agent: agent.Profile, Skills: skills,
		Builtins: builtins, Sink: ss.sink, Config: cfg})
	if err != nil {
		return nil, fmt.Errorf("server: runner: %w", err)
	}
	return ss, nil
}

// skills loads the tenant's skills as they are now (loadSkills) and
// builds each one's chain: the first-party guards with its tenant guards
// placed among them. A skill that does not load is dropped through drop;
// strict makes a file skill's failure an error (the start's Check).
func (s *Server) skills(ctx context.Context, tenant string, strict bool, drop func(key string, problems []string)) (Agent, []loop.Skill, []loop.Builtin, toolViews, error) {
	listed, err := s.opt.Tools.ListTools(ctx)
	if err != nil {
		return Agent{}, nil, nil, nil, fmt.Errorf("server: list tools: %w", err)
	}
	agent, err := s.loadSkills(ctx, tenant, listed, strict, drop)
	if err != nil {
		return Agent{}, nil, nil, nil, err
	}
	defs := map[string]catalog.BusinessTool{}
	for _, t := range listed {
		defs[t.Name] = catalog.BusinessTool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema}
	}
	var recs []store.PluginRecord
	if reg := s.registry(); reg != nil {
		if recs, err = reg.Plugins(ctx, tenant); err != nil {
			return Agent{}, nil, nil, nil, fmt.Errorf("server: plugins of %s: %w", tenant, err)
		}
	}
	inv := &chain.Invoker{Caller: s.caller(tenant), DefaultTimeout: s.opt.ToolTimeout}
	guards := s.guards()
	labels := toolViews{}
	live, isLive := s.opt.Tools.(tools.Live)
	var skills []loop.Skill
	for _, sk := range agent.Skills {
		// A tool the contract is silent about is a write when its server's
		// annotations say so (RATIONALE: annotations as a fallback contract).
		hinted, _, err := tools.ApplyHints(sk, listed)
		if err != nil {
			return Agent{}, nil, nil, nil, fmt.Errorf("server: skill %s: %w", sk.Profile.SkillKey, err)
		}
		sk = hinted
		// The skill's tenant guards, from the tenant's registry: a ref
		// that does not load drops the skill, never the guard alone.
		placed, err := s.placements(ctx, tenant, sk.Contract, recs)
		if err == nil {
			var ch *chain.Chain
			if ch, err = chain.New(guards, placed, inv); err == nil {
				var bts []catalog.BusinessTool
				for _, n := range sk.ToolNames {
					d, ok := defs[n]
					switch {
					case !ok && (!isLive || strict):
						// At start (strict) a tool no server lists is a
						// mistake in the skills, said loudly.
						err = fmt.Errorf("tool %s is not served", n)
					case !ok:
						// Since start its server dropped it, or the skills
						// named it since: the node's catalog offers it once
						// a server lists it again (tools/list_changed).
						s.log.Info("tool not served now", "skill", sk.Profile.SkillKey, "tool", n)
					default:
						bts = append(bts, d)
					}
					if err != nil {
						break
					}
				}
				if err == nil {
					for _, n := range sk.ToolNames {
						labels.add(n, toolOf(sk.Contract, n))
					}
					lsk := loop.Skill{Skill: sk, Chain: ch, Tools: bts}
					if isLive {
						lsk.Live = tools.LiveDefinitions(live, sk, listed)
					}
					skills = append(skills, lsk)
					continue
				}
			}
		}
		if strict {
			return Agent{}, nil, nil, nil, fmt.Errorf("server: skill %s: %w", sk.Profile.SkillKey, err)
		}
		drop(sk.Profile.SkillKey, []string{err.Error()})
	}
	agent.Skills = nil
	for _, k := range skills {
		agent.Skills = append(agent.Skills, k.Skill)
	}
	// The first-party builtins, then the tenant's own.
	builtins := append(s.builtins(), s.tenantBuiltins(ctx, tenant, recs, func(ref, reason string) {
		drop("builtin:"+ref, []string{reason})
	})...)
	return agent, skills, builtins, labels, nil
}

// refresh loads the session's skills as they are now, for the task about
// to run (CONTRACT_SPEC §1.1: skills load each round), so an uploaded,
// changed or deleted skill or plugin takes effect with the next message
// on every instance. A skill that does not load is dropped with an ERROR
// event of kind SKILL on the task (a tenant builtin that does not load is
// left out the same way, naming it). Call it holding the session's run
// lock, with no task waiting.
func (s *Server) refresh(ctx context.Context, ss *session, task string) error {
	drop := func(key string, problems []string) {
		s.log.Error("skill dropped", "tenant", ss.tenant, "session", ss.id, "task", task, "skill", key, "problems", problems)
		msg := fmt.Sprintf("skill %s dropped: %s", key, strings.Join(problems, "; "))
		if ref, ok := strings.CutPrefix(key, "builtin:"); ok {
			msg = fmt.Sprintf("builtin %s not offered: %s", ref, strings.Join(problems, "; "))
		}
		ss.sink.Emit(loop.Event{Kind: KindSkill, Task: task, Level: "ERROR", Status: "dropped", Message: msg})
	}
	agent, skills, builtins, labels, err := s.skills(ctx, ss.tenant, false, drop)
	if err != nil {
		return err
	}
	r, err := loop.New(loop.Options{Model: ss.model, Store: ss.store, Agent: agent.Profile, Skills: skills,
		Builtins: builtins, Sink: ss.sink, Config: ss.cfg})
	if err != nil {
		return fmt.Errorf("server: runner: %w", err)
	}
	ss.mu.Lock()
	ss.labels = labels
	ss.mu.Unlock()
	ss.runner = r
	return nil
}

// KindSkill is the kind of the event that reports a skill dropped at load.
const KindSkill loop.Kind = "SKILL"

func toolOf(c *contract.Contract, name string) *contract.Tool {
	if c == nil {
		return nil
	}
	return c.Tools[name]
}
