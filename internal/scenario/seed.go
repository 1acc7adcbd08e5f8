package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/state"
)

// State is what the store holds before the node opens.
type State struct {
	// Ledger entries of the task's writes.
	Ledger []SeedWrite `json:"ledger,omitempty"`
	// Evidence items, registered as the evidence guard would; their
	// node defaults to the node that runs.
	Evidence []json.RawMessage `json:"evidence,omitempty"`
	// Entities of the session's entity index, newest last.
	Entities []SeedEntity `json:"entities,omitempty"`
	// Scratch values of the node (builtin_state_set's keys).
	Scratch map[string]json.RawMessage `json:"scratch,omitempty"`
	// Shared values (CONTRACT_SPEC §8): key → value and scope, as a
	// finished node's output with share TASK (the task's values) or
	// SESSION (the session's values) leaves them.
	Shared map[string]SeedShare `json:"shared,omitempty"`
}

// SeedEntity is one entity of the session's index. Its id is a string, a
// number or a boolean, kept with its type as an entity recognised in a
// response keeps it (prior.<type>.id binds it so).
type SeedEntity struct {
	Type  string                     `json:"type"`
	ID    json.RawMessage            `json:"id"`
	Name  string                     `json:"name,omitempty"`
	Attrs map[string]json.RawMessage `json:"attrs,omitempty"`
}

// entity is e as the entity index holds it.
func (e SeedEntity) entity() (abi.Entity, error) {
	out := abi.Entity{Type: e.Type, Name: e.Name, Attrs: e.Attrs}
	if e.Type == "" || len(e.ID) == 0 {
		return out, errors.New("type and id are required")
	}
	var v any
	if err := json.Unmarshal(e.ID, &v); err != nil {
		return out, fmt.Errorf("id: %w", err)
	}
	switch id := v.(type) {
	case string:
		out.ID = id
	case float64, bool:
		var b bytes.Buffer
		if err := json.Compact(&b, e.ID); err != nil {
			return out, fmt.Errorf("id: %w", err)
		}
		out.ID, out.IDJSON = b.String(), json.RawMessage(b.Bytes())
	default:
		return out, fmt.Errorf("id %s: a string, a number or a boolean", e.ID)
	}
	if out.ID == "" {
		return out, errors.New("type and id are required")
	}
	return out, nil
}

// entities converts the seeded entities, naming the bad one.
func entities(list []SeedEntity) ([]abi.Entity, error) {
	var out []abi.Entity
	for i, e := range list {
		ent, err := e.entity()
		if err != nil {
			return nil, fmt.Errorf("state.entities[%d]: %w", i, err)
		}
		out = append(out, ent)
	}
	return out, nil
}

// SeedShare is one shared value and its scope: TASK or SESSION.
type SeedShare struct {
	Value json.RawMessage `json:"value"`
	Share contract.Share  `json:"share"`
}

// Seed nodes: the node that leaves the seeded shared values, in the task
// of a one-node scenario, and the task and node that leave the session's
// values and entities before a task scenario's first message.
const (
	sharedNode = "n0.shared"
	seedTask   = "t0"
	seedNode   = "t0.seed"
)

// SeedWrite is one ledger entry: a write of tool with args, in a state.
type SeedWrite struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
	// State: STARTED, UNKNOWN, UNKNOWN_PRE_CALL or FAILED.
	State string `json:"state"`
	// Node is whose write it is: "self" (default), the node that runs, or
	// "earlier", a node of the same task that ran before it.
	Node string `json:"node,omitempty"`
}

// earlierNode is the node seeded writes of an earlier node belong to.
const earlierNode = "n0"

var seedStates = map[string]abi.LedgerState{
	string(abi.LedgerStarted): abi.LedgerStarted, string(abi.LedgerUnknown): abi.LedgerUnknown,
	string(abi.LedgerUnknownPreCall): abi.LedgerUnknownPreCall, string(abi.LedgerFailed): abi.LedgerFailed,
}

func (s State) validate() error {
	for i, w := range s.Ledger {
		switch {
		case w.Tool == "" || !json.Valid(w.Args):
			return fmt.Errorf("state.ledger[%d]: tool and JSON args are required", i)
		case seedStates[w.State] == "":
			return fmt.Errorf("state.ledger[%d]: state %q: want STARTED, UNKNOWN, UNKNOWN_PRE_CALL or FAILED", i, w.State)
		case w.Node != "" && w.Node != "self" && w.Node != "earlier":
			return fmt.Errorf("state.ledger[%d]: node %q: want self or earlier", i, w.Node)
		}
	}
	for i, e := range s.Evidence {
		var it abi.EvidenceItem
		if err := json.Unmarshal(e, &it); err != nil || it.ID == "" || it.Tool == "" {
			return fmt.Errorf("state.evidence[%d]: an evidence item with id and tool is required", i)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Shared)) {
		v := s.Shared[k]
		switch {
		case k == "":
			return fmt.Errorf("state.shared: an empty key")
		case v.Share != contract.ShareTask && v.Share != contract.ShareSession:
			return fmt.Errorf("state.shared.%s: share %q: want TASK or SESSION", k, v.Share)
		case !json.Valid(v.Value):
			return fmt.Errorf("state.shared.%s: a JSON value is required", k)
		}
	}
	_, err := entities(s.Entities)
	return err
}

// seedShared leaves the shared values as the outputs of node id of task,
// created with a contract that shares each with its scope, then finished
// (the store shares a node's outputs when it finishes, §8); the entities
// are recorded by the same node.
func seedShared(st *state.Memory, task, id string, shared map[string]SeedShare, seeded []SeedEntity) error {
	if len(shared)+len(seeded) == 0 {
		return nil
	}
	ents, err := entities(seeded)
	if err != nil {
		return err
	}
	outputs := map[string]any{}
	var effects []abi.Effect
	for _, k := range slices.Sorted(maps.Keys(shared)) {
		outputs[k] = map[string]any{"share": shared[k].Share, "sources": []string{"USER"}}
		b, err := json.Marshal(abi.OutputWrite{Key: k, OutputValue: abi.OutputValue{Value: shared[k].Value, SourceType: "USER"}})
		if err != nil {
			return err
		}
		effects = append(effects, abi.Effect{Kind: abi.EffectOutputWrite, Payload: b})
	}
	for _, e := range ents {
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		effects = append(effects, abi.Effect{Kind: abi.EffectEntityRecord, Payload: b})
	}
	c, err := json.Marshal(map[string]any{"outputs": outputs})
	if err != nil {
		return err
	}
	effects = append(effects, abi.Effect{Kind: abi.EffectNodeFinish, Payload: []byte(`{"output":"seeded"}`)})
	if err := st.CreateNode(state.Node{ID: id, TaskID: task, SkillKey: "scenario.seed", Contract: c}); err != nil {
		return fmt.Errorf("state.shared: %w", err)
	}
	if err := st.Apply(id, effects); err != nil {
		return fmt.Errorf("state.shared: %w", err)
	}
	return nil
}

// seedSession seeds a task scenario before its first message: the
// session's values (shared SESSION) and entities, left by a finished node
// of a seed task t0 that is not part of the graph.
func seedSession(st *state.Memory, s State) error {
	if len(s.Shared)+len(s.Entities) == 0 {
		return nil
	}
	if err := st.CreateTask(state.Task{ID: seedTask, Objective: "seeded state"}); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if err := seedShared(st, seedTask, seedNode, s.Shared, s.Entities); err != nil {
		return err
	}
	if err := st.SetTaskStatus(seedTask, state.Done); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	return nil
}

// seed applies s to the store: the earlier node's writes on node n0 of the
// task (created, then ended DONE), the rest on the node that runs.
func seed(st *state.Memory, s State, run Skill, c *contract.Contract, now time.Time) error {
	effects := map[string][]abi.Effect{}
	add := func(node, kind string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		effects[node] = append(effects[node], abi.Effect{Kind: kind, Payload: b})
		return nil
	}
	for i, w := range s.Ledger {
		var args bytes.Buffer
		if err := json.Compact(&args, w.Args); err != nil {
			return fmt.Errorf("state.ledger[%d]: %w", i, err)
		}
		node := nodeID
		if w.Node == "earlier" {
			node = earlierNode
		}
		key := c.Tool(w.Tool).KeyFor(args.Bytes())
		if err := add(node, abi.EffectLedgerReserve, abi.LedgerReserve{Tool: w.Tool, Key: key, ArgsDigest: state.ArgsDigest(args.Bytes()),
			CallID: fmt.Sprintf("seed_%d", i+1), StartedAt: now.UTC().Format(time.RFC3339Nano)}); err != nil {
			return err
		}
		if ls := seedStates[w.State]; ls != abi.LedgerStarted {
			if err := add(node, abi.EffectLedgerSettle, abi.LedgerSettle{Tool: w.Tool, Key: key, State: ls}); err != nil {
				return err
			}
		}
	}
	for _, e := range s.Evidence {
		effects[nodeID] = append(effects[nodeID], abi.Effect{Kind: abi.EffectEvidenceRegister, Payload: e})
	}
	ents, err := entities(s.Entities)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := add(nodeID, abi.EffectEntityRecord, e); err != nil {
			return err
		}
	}
	for k, v := range s.Scratch {
		if err := add(nodeID, abi.EffectStateSet, abi.StateSet{Key: k, Value: v}); err != nil {
			return err
		}
	}
	if e := effects[earlierNode]; len(e) > 0 {
		if err := st.CreateNode(state.Node{ID: earlierNode, TaskID: taskID, SkillKey: run.SkillKey, Contract: run.Contract,
			ToolNames: run.ToolNames}); err != nil {
			return err
		}
		if err := st.Apply(earlierNode, e); err != nil {
			return fmt.Errorf("state: %w", err)
		}
		if err := st.SetNodeStatus(earlierNode, state.Done, ""); err != nil {
			return err
		}
	}
	if err := seedShared(st, taskID, sharedNode, s.Shared, nil); err != nil {
		return err
	}
	if e := effects[nodeID]; len(e) > 0 {
		if err := st.Apply(nodeID, e); err != nil {
			return fmt.Errorf("state: %w", err)
		}
	}
	return nil
}
