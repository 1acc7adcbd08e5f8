package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/state"
)

// PlanSource says where a task graph came from.
type PlanSource string

// Plan sources.
const (
	// PlanSingle: one REACT candidate, planning skipped (§3).
	PlanSingle PlanSource = "SINGLE"
	// PlanModel: the model's plan, validated.
	PlanModel PlanSource = "MODEL"
	// PlanFallback: the model's plan was unusable; one node per candidate
	// skill, in order.
	PlanFallback PlanSource = "FALLBACK"
)

// PlanNode is one node of a task graph, as the planning model writes it.
type PlanNode struct {
	ID        string   `json:"id"`
	SkillKey  string   `json:"skill_key"`
	Objective string   `json:"objective,omitempty"`
	DependsOn []string `json:"dependsOn,omitempty"`
	// Target is the completion target (CONTRACT_SPEC §10.1 order 1); one
	// that is not a write tool of the skill in its toolNames is dropped.
	Target string `json:"target,omitempty"`
	// Provider marks a pre-node inserted for inputs.provider (§7).
	Provider bool `json:"provider,omitempty"`
}

// Plan is a task graph in the order its nodes run: every node after the
// nodes it depends on.
type Plan struct {
	Nodes  []PlanNode `json:"nodes"`
	Source PlanSource `json:"-"`
	// Problem is why a model's plan was replaced by the fallback.
	Problem string `json:"-"`
}

// errPlan marks a plan that does not validate.
var errPlan = errors.New("invalid plan")

// plan builds the task graph for an objective over candidate skills
// (CONTRACT_SPEC §3, §10.1, TOOL_OBSERVATION §7): a single REACT candidate
// is one node without asking the model; otherwise the model plans and its
// plan is validated, the fallback replacing it when it does not.
// inputs.provider pre-nodes are inserted either way.
func (r *Runner) plan(ctx context.Context, objective string, cands []string) (Plan, error) {
	var p Plan
	if len(cands) == 1 && r.skills[cands[0]].Skill.Contract.Mode != contract.ModePlan {
		p = Plan{Nodes: []PlanNode{{ID: "n1", SkillKey: cands[0]}}, Source: PlanSingle}
	} else {
		resp, err := r.model.Complete(ctx, model.Request{Messages: []model.Message{
			{Role: model.RoleSystem, Content: r.planPrompt(cands)},
			{Role: model.RoleUser, Content: objective},
		}})
		if err != nil {
			return Plan{}, fmt.Errorf("loop: plan: %w: %w", ErrModel, err)
		}
		p, err = r.validPlan(resp.Message.Content, cands)
		if err != nil {
			p = Plan{Source: PlanFallback, Problem: err.Error()}
			for i, k := range cands {
				n := PlanNode{ID: fmt.Sprintf("n%d", i+1), SkillKey: k}
				if i > 0 {
					n.DependsOn = []string{fmt.Sprintf("n%d", i)}
				}
				p.Nodes = append(p.Nodes, n)
			}
		}
	}
	return r.withProviders(p)
}

// planPrompt lists the candidate skills for the planning model.
func (r *Runner) planPrompt(cands []string) string {
	var b strings.Builder
	for _, k := range cands {
		sk := r.skills[k].Skill
		fmt.Fprintf(&b, "- %s：%s", k, sk.Profile.ShortDesc())
		var writes []string
		for _, t := range sk.ToolNames {
			if sk.Contract.Tool(t).IsWrite() {
				writes = append(writes, t)
			}
		}
		if len(writes) > 0 {
			fmt.Fprintf(&b, "（写工具：%s）", strings.Join(writes, "、"))
		}
		if m := strings.TrimSpace(sk.Profile.SkillManual); m != "" {
			b.WriteString("\n  " + strings.ReplaceAll(m, "\n", "\n  "))
		}
		b.WriteString("\n")
	}
	return r.text(txtPlanPrompt, strings.TrimRight(b.String(), "\n"))
}

// validPlan parses and checks the model's plan: at least one node, unique
// ids, known candidate skills, known dependencies, no cycle. A target that
// is not a write tool of its skill in toolNames is dropped, not fatal.
func (r *Runner) validPlan(text string, cands []string) (Plan, error) {
	i, j := strings.Index(text, "{"), strings.LastIndex(text, "}")
	if i < 0 || j < i {
		return Plan{}, fmt.Errorf("%w: no JSON object", errPlan)
	}
	var p Plan
	if err := json.Unmarshal([]byte(text[i:j+1]), &p); err != nil {
		return Plan{}, fmt.Errorf("%w: %w", errPlan, err)
	}
	if len(p.Nodes) == 0 {
		return Plan{}, fmt.Errorf("%w: no nodes", errPlan)
	}
	ids := map[string]bool{}
	for k := range p.Nodes {
		n := &p.Nodes[k]
		n.Provider = false
		switch {
		case n.ID == "" || ids[n.ID]:
			return Plan{}, fmt.Errorf("%w: node id %q missing or repeated", errPlan, n.ID)
		case !slices.Contains(cands, n.SkillKey):
			return Plan{}, fmt.Errorf("%w: node %s: unknown skill %q", errPlan, n.ID, n.SkillKey)
		}
		ids[n.ID] = true
		sk := r.skills[n.SkillKey].Skill
		if n.Target != "" && !(sk.Contract.Tool(n.Target).IsWrite() && slices.Contains(sk.ToolNames, n.Target)) {
			n.Target = ""
		}
	}
	for _, n := range p.Nodes {
		for _, d := range n.DependsOn {
			if !ids[d] || d == n.ID {
				return Plan{}, fmt.Errorf("%w: node %s depends on %q", errPlan, n.ID, d)
			}
		}
	}
	order, ok := topo(p.Nodes)
	if !ok {
		return Plan{}, fmt.Errorf("%w: the dependencies form a cycle", errPlan)
	}
	p.Nodes, p.Source = order, PlanModel
	return p, nil
}

// topo orders nodes after their dependencies, keeping the given order
// among nodes that are free to run; false when there is a cycle.
func topo(nodes []PlanNode) ([]PlanNode, bool) {
	done := map[string]bool{}
	var out []PlanNode
	for len(out) < len(nodes) {
		progressed := false
		for _, n := range nodes {
			if done[n.ID] {
				continue
			}
			ready := true
			for _, d := range n.DependsOn {
				ready = ready && done[d]
			}
			if ready {
				done[n.ID], progressed = true, true
				out = append(out, n)
			}
		}
		if !progressed {
			return nil, false
		}
	}
	return out, true
}

// withProviders inserts a pre-node before each node for every input with a
// provider (§7): not the skill itself, and not when the input reads
// shared. or session. and the value already exists. A provider already in
// the graph before the node becomes a dependency instead. A provider that
// is no skill of this agent fails the plan (§16, §17): a
// *ProviderUnavailableError.
func (r *Runner) withProviders(p Plan) (Plan, error) {
	shared := r.store.SessionValues()
	var out []PlanNode
	for _, n := range p.Nodes {
		c := r.skills[n.SkillKey].Skill.Contract
		for _, k := range c.InputNames() {
			in := c.Inputs[k]
			prov := in.Provider
			if _, ok := r.skills[prov]; prov != "" && !ok {
				return Plan{}, &ProviderUnavailableError{Skill: n.SkillKey, Input: k, Provider: prov}
			}
			if prov == "" || prov == n.SkillKey {
				continue
			}
			if in.From != nil && (in.From.Kind == contract.ExprShared || in.From.Kind == contract.ExprSession) {
				if v := in.From.Path.Get(docOf(shared)); v.Exists() {
					continue
				}
			}
			if i := slices.IndexFunc(out, func(o PlanNode) bool { return o.SkillKey == prov }); i >= 0 {
				if !slices.Contains(n.DependsOn, out[i].ID) {
					n.DependsOn = append(n.DependsOn, out[i].ID)
				}
				continue
			}
			pre := PlanNode{ID: n.ID + ".pre." + prov, SkillKey: prov, Objective: r.skills[prov].Skill.Profile.ShortDesc(), Provider: true}
			out = append(out, pre)
			n.DependsOn = append(n.DependsOn, pre.ID)
		}
		out = append(out, n)
	}
	p.Nodes = out
	return p, nil
}

// docOf makes one JSON object of a value map, for path lookups.
func docOf(m map[string]json.RawMessage) []byte {
	b, err := json.Marshal(m)
	if err != nil || len(m) == 0 {
		return []byte("{}")
	}
	return b
}

// bindInputs binds a node's inputs at its start (§7): each input from its
// from expression, filling only what is not bound yet. An input without
// from takes the same-named output of the nearest completed upstream node.
// What cannot be bound stays unbound; the prompt marks it when required.
func (r *Runner) bindInputs(taskID string, c *contract.Contract, upstream []string, bound map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	if bound == nil {
		bound = map[string]json.RawMessage{}
	}
	shared, err := r.store.Shared(taskID)
	if err != nil {
		return nil, fmt.Errorf("loop: %w", err)
	}
	session := r.store.SessionValues()
	for _, k := range c.InputNames() {
		if _, ok := bound[k]; ok {
			continue
		}
		in := c.Inputs[k]
		var v json.RawMessage
		switch {
		case in.From == nil || in.From.Kind == contract.ExprUpstream || in.From.Kind == contract.ExprOutputs:
			for _, id := range upstream {
				n, err := r.store.Node(id)
				if err != nil || n.Status != state.Done {
					continue
				}
				doc := map[string]json.RawMessage{}
				for key, o := range n.Outputs {
					doc[key] = o.Value
				}
				if in.From == nil {
					v = doc[k]
				} else if g := in.From.Path.Get(docOf(doc)); g.Exists() {
					v = json.RawMessage(g.Raw)
				}
				if v != nil {
					break
				}
			}
		case in.From.Kind == contract.ExprShared:
			if g := in.From.Path.Get(docOf(shared)); g.Exists() {
				v = json.RawMessage(g.Raw)
			}
		case in.From.Kind == contract.ExprSession:
			if g := in.From.Path.Get(docOf(session)); g.Exists() {
				v = json.RawMessage(g.Raw)
			}
		case in.From.Kind == contract.ExprPrior:
			v = prior(r.store.Entities(), in.From)
		}
		if v != nil {
			bound[k] = v
		}
	}
	return bound, nil
}

// prior reads prior.<type>[.<attr>] or prior.<type:id>.<attr> from the
// session's entities, newest first (§7, §9).
func prior(entities []abi.Entity, e *contract.Expr) json.RawMessage {
	for _, en := range entities {
		if en.Type != e.EntityType || (e.EntityID != "" && en.ID != e.EntityID) {
			continue
		}
		var s string
		switch e.Attr {
		case "", "displayName":
			s = en.Name
		case "id":
			if len(en.IDJSON) > 0 {
				return en.IDJSON
			}
			s = en.ID
		default:
			return en.Attrs[e.Attr]
		}
		if s == "" {
			return nil
		}
		b, _ := json.Marshal(s)
		return b
	}
	return nil
}

// InputsHint renders a node's bound inputs for its prompt and marks the
// required ones that could not be bound (§7: missing does not stop the
// node). A contract without inputs gets "".
func InputsHint(c *contract.Contract, bound map[string]json.RawMessage, l abi.Locale) string {
	if c == nil || len(c.Inputs) == 0 {
		return ""
	}
	var lines, missing []string
	for _, k := range c.InputNames() {
		if v, ok := bound[k]; ok {
			lines = append(lines, k+": "+string(v))
		} else if c.Inputs[k].Required {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		sep := "、"
		if l == abi.LocaleEN {
			sep = ", "
		}
		lines = append(lines, textFor(l, txtInputsMissing, strings.Join(missing, sep)))
	}
	return strings.Join(lines, "\n")
}
