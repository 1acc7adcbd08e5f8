package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/loop/state"
)

// State is what the store holds before the node opens.
type State struct {
	// Ledger entries of the task's writes.
	Ledger []SeedWrite `json:"ledger,omitempty"`
	// Evidence items, registered as the evidence guard would; their
	// node defaults to the node that runs.
	Evidence []json.RawMessage `json:"evidence,omitempty"`
	// Entities of the session's entity index, newest last.
	Entities []abi.Entity `json:"entities,omitempty"`
	// Scratch values of the node (builtin_state_set's keys).
	Scratch map[string]json.RawMessage `json:"scratch,omitempty"`
}

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
	for _, e := range s.Entities {
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
	if e := effects[nodeID]; len(e) > 0 {
		if err := st.Apply(nodeID, e); err != nil {
			return fmt.Errorf("state: %w", err)
		}
	}
	return nil
}
