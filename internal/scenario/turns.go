package scenario

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/loop"
)

// plannerKey keys the planning turns in models.
const plannerKey = "planner"

// turns plays a scenario's scripted model turns. A request goes to the
// sequence of models keyed by the node asking (t1.n1, t1.n1.d1), else by
// that node's skill, the planner's request (it offers no tools) to
// models.planner; any request without a keyed sequence takes the next
// turn of model. The node asking is the node of the last event that names
// one: the loop emits a node's NODE or RESUME event before asking the
// model for it, and runs one node at a time.
type turns struct {
	shared *scripted.Model
	keyed  map[string]*scripted.Model
	st     *state.Memory
	rec    *loop.Recorder
}

func newTurns(s Scenario, st *state.Memory, rec *loop.Recorder) (*turns, error) {
	obs := observer(st, rec)
	t := &turns{keyed: map[string]*scripted.Model{}, st: st, rec: rec}
	var err error
	if t.shared, err = scripted.New(s.Model); err != nil {
		return nil, err
	}
	t.shared.SetObserver(obs)
	for k, seq := range s.Models {
		m, err := scripted.New(seq)
		if err != nil {
			return nil, fmt.Errorf("models.%s: %w", k, err)
		}
		m.SetObserver(obs)
		t.keyed[k] = m
	}
	return t, nil
}

// key is the models key that answers req, "" for model.
func (t *turns) key(req model.Request) string {
	node, skill := asking(t.rec, t.st, req)
	switch {
	case node == plannerKey:
		if t.keyed[plannerKey] != nil {
			return plannerKey
		}
	case node != "" && t.keyed[node] != nil:
		return node
	case skill != "" && t.keyed[skill] != nil:
		return skill
	}
	return ""
}

// asking is who sends req: the planner (a request without tools), else
// the node of the latest event and its skill; "" when no node has run.
func asking(rec *loop.Recorder, st *state.Memory, req model.Request) (node, skill string) {
	if len(req.Tools) == 0 {
		return plannerKey, ""
	}
	events := rec.Events()
	for i := len(events) - 1; i >= 0 && node == ""; i-- {
		node = events[i].Node
	}
	if node == "" {
		return "", ""
	}
	if n, err := st.Node(node); err == nil {
		skill = n.SkillKey
	}
	return node, skill
}

// Complete answers req from its sequence. The calls of a keyed turn get
// the key in their ids, so that ids stay unique across the sequences.
func (t *turns) Complete(ctx context.Context, req model.Request) (model.Response, error) {
	k := t.key(req)
	if k == "" {
		return t.shared.Complete(ctx, req)
	}
	resp, err := t.keyed[k].Complete(ctx, req)
	if err != nil {
		return resp, fmt.Errorf("models.%s: %w", k, err)
	}
	for i := range resp.Message.ToolCalls {
		c := &resp.Message.ToolCalls[i]
		c.ID = strings.Replace(c.ID, "call_", "call_"+k+"_", 1)
	}
	return resp, nil
}

// unplayed lists the sequences with turns left, "" when every turn was
// played.
func (t *turns) unplayed() string {
	var parts []string
	if r := t.shared.Remaining(); r > 0 && len(t.keyed) == 0 {
		return fmt.Sprintf("%d scripted model turns were not played", r)
	} else if r > 0 {
		parts = append(parts, fmt.Sprintf("model: %d", r))
	}
	keys := make([]string, 0, len(t.keyed))
	for k := range t.keyed {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	total := t.shared.Remaining()
	for _, k := range keys {
		if r := t.keyed[k].Remaining(); r > 0 {
			parts = append(parts, fmt.Sprintf("models.%s: %d", k, r))
			total += r
		}
	}
	if total == 0 {
		return ""
	}
	return fmt.Sprintf("%d scripted model turns were not played (%s)", total, strings.Join(parts, ", "))
}
