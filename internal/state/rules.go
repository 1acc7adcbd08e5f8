package state

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/model"
)

// Rules is the Store every storage shares: each rule of a session's state
// (the ledger's, the views', the effects') written once, over a Storage
// that keeps the records. Every method is one transaction of the storage.
type Rules struct {
	opt Options
	st  Storage
}

var _ Store = (*Rules)(nil)

// WithDefaults fills the zero fields of the options with their defaults.
func (o Options) WithDefaults() Options {
	if o.FingerprintLimit == 0 {
		o.FingerprintLimit = 3
	}
	if o.Conversation == 0 {
		o.Conversation = 20
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// NewRules returns the Store of the session opt names, kept in st.
func NewRules(opt Options, st Storage) (*Rules, error) {
	if opt.SessionID == "" {
		return nil, fmt.Errorf("state: new store: empty session id")
	}
	return &Rules{opt: opt.WithDefaults(), st: st}, nil
}

// SessionID returns the session's id.
func (r *Rules) SessionID() string { return r.opt.SessionID }

func (r *Rules) update(fn func(Tx) error) error { return r.st.Update(fn) }
func (r *Rules) view(fn func(Tx) error) error   { return r.st.View(fn) }

// task reads a task that must exist.
func task(tx Tx, id string) (*Task, error) {
	t, err := tx.Task(id)
	if err == nil && t == nil {
		err = fmt.Errorf("state: task %s: %w", id, ErrNotFound)
	}
	return t, err
}

// node reads a node that must exist, without its held write.
func node(tx Tx, id string) (*NodeRecord, error) {
	n, err := tx.Node(id)
	if err == nil && n == nil {
		err = fmt.Errorf("state: node %s: %w", id, ErrNotFound)
	}
	return n, err
}

// nodeTask reads a node and its task, both of which must exist.
func nodeTask(tx Tx, id string) (*NodeRecord, *Task, error) {
	n, err := node(tx, id)
	if err != nil {
		return nil, nil, err
	}
	t, err := tx.Task(n.TaskID)
	if err == nil && t == nil {
		err = fmt.Errorf("state: node %s: task %s: %w", id, n.TaskID, ErrNotFound)
	}
	return n, t, err
}

// changeNode reads a node, lets fn change it and saves it.
func (r *Rules) changeNode(id string, fn func(tx Tx, n *NodeRecord) error) error {
	return r.update(func(tx Tx) error {
		n, err := node(tx, id)
		if err != nil {
			return err
		}
		if err := fn(tx, n); err != nil {
			return err
		}
		return tx.SaveNode(*n)
	})
}

func (r *Rules) CreateTask(t Task) error {
	if t.ID == "" {
		return fmt.Errorf("state: create task: empty id")
	}
	if t.Status == "" {
		t.Status = Running
	}
	return r.update(func(tx Tx) error {
		if old, err := tx.Task(t.ID); err != nil {
			return err
		} else if old != nil {
			return fmt.Errorf("state: task %s: %w", t.ID, ErrExists)
		}
		return tx.InsertTask(t)
	})
}

func (r *Rules) Task(id string) (Task, error) {
	var out Task
	err := r.view(func(tx Tx) error {
		t, err := task(tx, id)
		if err == nil {
			out = *t
		}
		return err
	})
	return out, err
}

func (r *Rules) SetTaskStatus(id string, s Status) error {
	return r.update(func(tx Tx) error {
		t, err := task(tx, id)
		if err != nil {
			return err
		}
		t.Status = s
		return tx.UpdateTask(*t)
	})
}

func (r *Rules) SetTaskGraph(id string, graph json.RawMessage) error {
	if !json.Valid(graph) {
		return fmt.Errorf("state: task %s: graph is not JSON", id)
	}
	return r.update(func(tx Tx) error {
		t, err := task(tx, id)
		if err != nil {
			return err
		}
		t.Graph = slices.Clone(graph)
		return tx.UpdateTask(*t)
	})
}

func (r *Rules) CreateNode(n Node) error {
	if n.ID == "" {
		return fmt.Errorf("state: create node: empty id")
	}
	rec := NodeRecord{Node: cloneNode(n)}
	if len(n.Contract) > 0 {
		src, err := contract.StripComments(n.Contract)
		if err != nil {
			return fmt.Errorf("state: node %s: contract: %w", n.ID, err)
		}
		c, _, err := contract.Parse(n.SkillKey, src)
		if err != nil {
			return fmt.Errorf("state: node %s: contract: %w", n.ID, err)
		}
		rec.Parsed, rec.Contract = c, src
	}
	if rec.Status == "" {
		rec.Status = Running
	}
	if rec.Outputs == nil {
		rec.Outputs = map[string]abi.OutputValue{}
	}
	if rec.Scratch == nil {
		rec.Scratch = map[string]json.RawMessage{}
	}
	rec.Gated, rec.Approved = nil, nil
	return r.update(func(tx Tx) error {
		if old, err := tx.Node(n.ID); err != nil {
			return err
		} else if old != nil {
			return fmt.Errorf("state: node %s: %w", n.ID, ErrExists)
		}
		if t, err := tx.Task(n.TaskID); err != nil {
			return err
		} else if t == nil {
			return fmt.Errorf("state: node %s: task %s: %w", n.ID, n.TaskID, ErrNotFound)
		}
		if rec.ParentID != "" {
			// A delegate is upstream of the node that delegated it.
			p, err := tx.Node(rec.ParentID)
			if err != nil {
				return err
			}
			if p != nil && !slices.Contains(p.Upstream, rec.ID) {
				p.Upstream = append([]string{rec.ID}, p.Upstream...)
				if err := tx.SaveNode(*p); err != nil {
					return err
				}
			}
		}
		return tx.InsertNode(rec)
	})
}

func (r *Rules) Node(id string) (Node, error) {
	var out Node
	err := r.view(func(tx Tx) error {
		n, err := node(tx, id)
		if err != nil {
			return err
		}
		out = n.Node
		out.Gated, out.Approved, err = tx.Approval(id)
		return err
	})
	return out, err
}

func (r *Rules) SetNodeStatus(id string, s Status, reason string) error {
	return r.changeNode(id, func(tx Tx, n *NodeRecord) error {
		n.Status, n.Reason = s, reason
		if s != Suspended {
			n.Suspension = nil
		}
		if s.Ended() {
			return settleDelegation(tx, n)
		}
		return nil
	})
}

func (r *Rules) SetTarget(id, tool string, claimed bool) error {
	return r.changeNode(id, func(_ Tx, n *NodeRecord) error {
		n.Target, n.TargetClaimed = tool, claimed
		return nil
	})
}

func (r *Rules) SetProgress(id string, stalls, rounds int) error {
	return r.changeNode(id, func(_ Tx, n *NodeRecord) error {
		n.Stalls, n.Rounds = stalls, rounds
		return nil
	})
}

func (r *Rules) AddUserMessage(text string) error {
	return r.update(func(tx Tx) error { return tx.AddUserMessage(text) })
}

func (r *Rules) AppendMessages(nodeID string, msgs ...model.Message) error {
	return r.update(func(tx Tx) error {
		if _, err := node(tx, nodeID); err != nil {
			return err
		}
		return tx.AppendMessages(nodeID, msgs)
	})
}

func (r *Rules) Messages(nodeID string) ([]model.Message, error) {
	var out []model.Message
	err := r.view(func(tx Tx) (err error) {
		if _, err := node(tx, nodeID); err != nil {
			return err
		}
		out, err = tx.Messages(nodeID)
		return err
	})
	return out, err
}

// Gate holds the write, replacing any held before it and dropping its
// approval: a CONFIRM binds one held write only.
func (r *Rules) Gate(nodeID, tool, callID string, args json.RawMessage) error {
	return r.update(func(tx Tx) error {
		if _, err := node(tx, nodeID); err != nil {
			return err
		}
		if tool == "" || !json.Valid(args) {
			return fmt.Errorf("state: gate %s on node %s: tool and JSON arguments are required", tool, nodeID)
		}
		return tx.PutGated(nodeID, abi.GatedCall{Tool: tool, CallID: callID, Args: slices.Clone(args), ArgsDigest: ArgsDigest(args),
			At: r.opt.Now().UTC().Format(time.RFC3339)})
	})
}

// Approve is single use: it resumes the node, so a second CONFIRM finds it
// no longer suspended for approval.
func (r *Rules) Approve(nodeID string, at time.Time) (abi.GatedCall, error) {
	var out abi.GatedCall
	err := r.changeNode(nodeID, func(tx Tx, n *NodeRecord) error {
		s := n.Suspension
		if n.Status != Suspended || s == nil || s.Kind != abi.SuspendApproval {
			return fmt.Errorf("state: approve node %s: %w", nodeID, ErrNotSuspended)
		}
		g, _, err := tx.Approval(nodeID)
		if err != nil {
			return err
		}
		if g == nil {
			return fmt.Errorf("state: approve node %s: %w", nodeID, ErrNotGated)
		}
		// What runs must be what the user saw: the held arguments, their
		// digest now, and the digest in the question all agree.
		if g.Tool != s.Tool || g.ArgsDigest != s.ArgsDigest || ArgsDigest(g.Args) != s.ArgsDigest {
			return fmt.Errorf("state: approve %s on node %s: %w", g.Tool, nodeID, ErrDigestMismatch)
		}
		a := abi.ApprovedCall{Tool: g.Tool, ArgsDigest: g.ArgsDigest, ApprovedAt: at.UTC().Format(time.RFC3339)}
		if err := tx.SetApproved(nodeID, a); err != nil {
			return err
		}
		n.Status, n.Suspension = Running, nil
		out = *g
		return nil
	})
	return out, err
}

func (r *Rules) ClearApproval(nodeID string) error {
	return r.update(func(tx Tx) error {
		if _, err := node(tx, nodeID); err != nil {
			return err
		}
		return tx.DeleteApproval(nodeID)
	})
}

func (r *Rules) AnswerFollowUp(nodeID, answer string) (abi.FollowUp, error) {
	var f abi.FollowUp
	err := r.changeNode(nodeID, func(tx Tx, n *NodeRecord) error {
		s := n.Suspension
		if n.Status != Suspended || s == nil || s.Kind != abi.SuspendFollowUp {
			return fmt.Errorf("state: answer node %s: %w", nodeID, ErrNotSuspended)
		}
		f = abi.FollowUp{Question: s.Question, ExpectedFields: slices.Clone(s.ExpectedFields), Answer: answer}
		n.FollowUp = &f
		if t, err := tx.Task(n.TaskID); err != nil {
			return err
		} else if t != nil {
			if err := tx.AddFollowUp(n.TaskID, f); err != nil {
				return err
			}
		}
		if err := tx.AddUserMessage(answer); err != nil {
			return err
		}
		n.Status, n.Suspension = Running, nil
		return nil
	})
	return f, err
}

func (r *Rules) Resuspend(nodeID string, at time.Time) error {
	return r.changeNode(nodeID, func(_ Tx, n *NodeRecord) error {
		if n.Status != Suspended || n.Suspension == nil {
			return fmt.Errorf("state: resuspend node %s: %w", nodeID, ErrNotSuspended)
		}
		n.Suspension.At = at
		return nil
	})
}

func (r *Rules) Ledger(taskID string) ([]abi.LedgerEntry, error) {
	var out []abi.LedgerEntry
	err := r.view(func(tx Tx) (err error) {
		if _, err := task(tx, taskID); err != nil {
			return err
		}
		out, err = tx.Ledger(taskID)
		return err
	})
	return out, err
}

// Evidence returns the node's own evidence, oldest first.
func (r *Rules) Evidence(nodeID string) ([]abi.EvidenceItem, error) {
	var out []abi.EvidenceItem
	err := r.view(func(tx Tx) (err error) {
		if _, err := node(tx, nodeID); err != nil {
			return err
		}
		out, err = tx.NodeEvidence(nodeID)
		return err
	})
	return out, err
}

func (r *Rules) Fingerprints(nodeID string) ([]abi.FingerprintRecord, error) {
	var out []abi.FingerprintRecord
	err := r.view(func(tx Tx) (err error) {
		if _, err := node(tx, nodeID); err != nil {
			return err
		}
		out, err = tx.Fingerprints(nodeID)
		return err
	})
	return out, err
}

// Entities returns the session's entities, newest first; nil when the
// storage cannot be read.
func (r *Rules) Entities() []abi.Entity {
	var out []abi.Entity
	_ = r.view(func(tx Tx) (err error) {
		out, err = tx.Entities()
		return err
	})
	return out
}

func (r *Rules) Shared(taskID string) (map[string]json.RawMessage, error) {
	var out map[string]json.RawMessage
	err := r.view(func(tx Tx) (err error) {
		if _, err := task(tx, taskID); err != nil {
			return err
		}
		out, err = tx.Shared(taskID)
		return err
	})
	return out, err
}

// SessionValues returns the session's shared values; nil when the storage
// cannot be read.
func (r *Rules) SessionValues() map[string]json.RawMessage {
	var out map[string]json.RawMessage
	_ = r.view(func(tx Tx) (err error) {
		out, err = tx.Values()
		return err
	})
	return out
}
