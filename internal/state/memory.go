package state

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/model"
)

// Options configure a Memory store. The zero value of each field takes the
// default named in its comment.
type Options struct {
	// SessionID names the session (required).
	SessionID string
	// Platform are the open platform fields of the login identity (§11).
	Platform map[string]json.RawMessage
	// BypassTools is state.write-confirm-bypass-tools (§14.1).
	BypassTools []string
	// FingerprintLimit is the breaker's count of identical successful calls;
	// 0 means 3.
	FingerprintLimit int
	// RepeatTools may legitimately repeat with the same arguments.
	RepeatTools []string
	// ReservedKeys are scratch keys builtin_state_set may not write.
	ReservedKeys []string
	// Conversation is how many recent user messages state.conversation
	// holds; 0 means 20.
	Conversation int
	// Now is the clock of follow-up and ledger timestamps; nil means
	// time.Now.
	Now func() time.Time
}

// Memory is the in-memory Store of one session.
type Memory struct {
	opt Options

	mu sync.Mutex
	d  data
}

var _ Store = (*Memory)(nil)

// data is everything Apply may change; Apply works on a clone and swaps it
// in, so that a failing effect leaves nothing behind.
type data struct {
	userMessages []string
	values       map[string]json.RawMessage
	entities     []abi.Entity // newest first
	evidence     []abi.EvidenceItem
	tasks        map[string]*task
	nodes        map[string]*node
}

type task struct {
	Task
	shared   map[string]json.RawMessage
	ledger   []abi.LedgerEntry
	answered []abi.FollowUp
	// calls are the bound arguments of write calls, by call id.
	calls map[string]json.RawMessage
}

type node struct {
	Node
	contract     *contract.Contract
	fingerprints []abi.FingerprintRecord
	messages     []model.Message
}

// NewMemory returns an empty store for one session.
func NewMemory(opt Options) (*Memory, error) {
	if opt.SessionID == "" {
		return nil, fmt.Errorf("state: new memory store: empty session id")
	}
	if opt.FingerprintLimit == 0 {
		opt.FingerprintLimit = 3
	}
	if opt.Conversation == 0 {
		opt.Conversation = 20
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	return &Memory{opt: opt, d: data{values: map[string]json.RawMessage{}, tasks: map[string]*task{}, nodes: map[string]*node{}}}, nil
}

// SessionID returns the session's id.
func (m *Memory) SessionID() string { return m.opt.SessionID }

func (m *Memory) CreateTask(t Task) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t.ID == "" {
		return fmt.Errorf("state: create task: empty id")
	}
	if _, ok := m.d.tasks[t.ID]; ok {
		return fmt.Errorf("state: task %s: %w", t.ID, ErrExists)
	}
	if t.Status == "" {
		t.Status = Running
	}
	m.d.tasks[t.ID] = &task{Task: t, shared: map[string]json.RawMessage{}}
	return nil
}

func (m *Memory) Task(id string) (Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.d.tasks[id]
	if !ok {
		return Task{}, fmt.Errorf("state: task %s: %w", id, ErrNotFound)
	}
	out := t.Task
	out.Graph = slices.Clone(out.Graph)
	return out, nil
}

func (m *Memory) SetTaskStatus(id string, s Status) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.d.tasks[id]
	if !ok {
		return fmt.Errorf("state: task %s: %w", id, ErrNotFound)
	}
	t.Status = s
	return nil
}

func (m *Memory) SetTaskGraph(id string, graph json.RawMessage) error {
	if !json.Valid(graph) {
		return fmt.Errorf("state: task %s: graph is not JSON", id)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.d.tasks[id]
	if !ok {
		return fmt.Errorf("state: task %s: %w", id, ErrNotFound)
	}
	t.Graph = slices.Clone(graph)
	return nil
}

func (m *Memory) CreateNode(n Node) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n.ID == "" {
		return fmt.Errorf("state: create node: empty id")
	}
	if _, ok := m.d.nodes[n.ID]; ok {
		return fmt.Errorf("state: node %s: %w", n.ID, ErrExists)
	}
	if _, ok := m.d.tasks[n.TaskID]; !ok {
		return fmt.Errorf("state: node %s: task %s: %w", n.ID, n.TaskID, ErrNotFound)
	}
	nn := &node{Node: cloneNode(n)}
	if len(n.Contract) > 0 {
		src, err := contract.StripComments(n.Contract)
		if err != nil {
			return fmt.Errorf("state: node %s: contract: %w", n.ID, err)
		}
		c, _, err := contract.Parse(n.SkillKey, src)
		if err != nil {
			return fmt.Errorf("state: node %s: contract: %w", n.ID, err)
		}
		nn.contract, nn.Contract = c, src
	}
	if nn.Status == "" {
		nn.Status = Running
	}
	if nn.Outputs == nil {
		nn.Outputs = map[string]abi.OutputValue{}
	}
	if nn.Scratch == nil {
		nn.Scratch = map[string]json.RawMessage{}
	}
	if nn.ParentID != "" {
		if p, ok := m.d.nodes[nn.ParentID]; ok && !slices.Contains(p.Upstream, nn.ID) {
			p.Upstream = append([]string{nn.ID}, p.Upstream...)
		}
	}
	m.d.nodes[n.ID] = nn
	return nil
}

func (m *Memory) node(id string) (*node, error) {
	n, ok := m.d.nodes[id]
	if !ok {
		return nil, fmt.Errorf("state: node %s: %w", id, ErrNotFound)
	}
	return n, nil
}

func (m *Memory) Node(id string) (Node, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.node(id)
	if err != nil {
		return Node{}, err
	}
	return cloneNode(n.Node), nil
}

func (m *Memory) SetNodeStatus(id string, s Status, reason string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.node(id)
	if err != nil {
		return err
	}
	n.Status, n.Reason = s, reason
	if s != Suspended {
		n.Suspension = nil
	}
	if s.Ended() {
		settleDelegation(&m.d, n)
	}
	return nil
}

func (m *Memory) SetTarget(id, tool string, claimed bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.node(id)
	if err != nil {
		return err
	}
	n.Target, n.TargetClaimed = tool, claimed
	return nil
}

func (m *Memory) SetProgress(id string, stalls, rounds int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.node(id)
	if err != nil {
		return err
	}
	n.Stalls, n.Rounds = stalls, rounds
	return nil
}

func (m *Memory) AddUserMessage(text string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.d.userMessages = append(m.d.userMessages, text)
	return nil
}

func (m *Memory) AppendMessages(nodeID string, msgs ...model.Message) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.node(nodeID)
	if err != nil {
		return err
	}
	n.messages = append(n.messages, msgs...)
	return nil
}

func (m *Memory) Messages(nodeID string) ([]model.Message, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.node(nodeID)
	if err != nil {
		return nil, err
	}
	return slices.Clone(n.messages), nil
}

func (m *Memory) Gate(nodeID, tool, callID string, args json.RawMessage) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.node(nodeID)
	if err != nil {
		return err
	}
	if tool == "" || !json.Valid(args) {
		return fmt.Errorf("state: gate %s on node %s: tool and JSON arguments are required", tool, nodeID)
	}
	n.Gated = &abi.GatedCall{Tool: tool, CallID: callID, Args: slices.Clone(args), ArgsDigest: ArgsDigest(args),
		At: m.opt.Now().UTC().Format(time.RFC3339)}
	n.Approved = nil
	return nil
}

func (m *Memory) Approve(nodeID string, at time.Time) (abi.GatedCall, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.node(nodeID)
	if err != nil {
		return abi.GatedCall{}, err
	}
	s := n.Suspension
	if n.Status != Suspended || s == nil || s.Kind != abi.SuspendApproval {
		return abi.GatedCall{}, fmt.Errorf("state: approve node %s: %w", nodeID, ErrNotSuspended)
	}
	g := n.Gated
	if g == nil {
		return abi.GatedCall{}, fmt.Errorf("state: approve node %s: %w", nodeID, ErrNotGated)
	}
	// What runs must be what the user saw: the held arguments, their
	// digest now, and the digest in the question all agree.
	if g.Tool != s.Tool || g.ArgsDigest != s.ArgsDigest || ArgsDigest(g.Args) != s.ArgsDigest {
		return abi.GatedCall{}, fmt.Errorf("state: approve %s on node %s: %w", g.Tool, nodeID, ErrDigestMismatch)
	}
	n.Approved = &abi.ApprovedCall{Tool: g.Tool, ArgsDigest: g.ArgsDigest, ApprovedAt: at.UTC().Format(time.RFC3339)}
	n.Status, n.Suspension = Running, nil
	return *cloneGated(g), nil
}

func (m *Memory) ClearApproval(nodeID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.node(nodeID)
	if err != nil {
		return err
	}
	n.Gated, n.Approved = nil, nil
	return nil
}

func (m *Memory) AnswerFollowUp(nodeID, answer string) (abi.FollowUp, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.node(nodeID)
	if err != nil {
		return abi.FollowUp{}, err
	}
	s := n.Suspension
	if n.Status != Suspended || s == nil || s.Kind != abi.SuspendFollowUp {
		return abi.FollowUp{}, fmt.Errorf("state: answer node %s: %w", nodeID, ErrNotSuspended)
	}
	f := abi.FollowUp{Question: s.Question, ExpectedFields: slices.Clone(s.ExpectedFields), Answer: answer}
	n.FollowUp = &f
	if t, ok := m.d.tasks[n.TaskID]; ok {
		t.answered = append(t.answered, f)
	}
	m.d.userMessages = append(m.d.userMessages, answer)
	n.Status, n.Suspension = Running, nil
	return f, nil
}

func (m *Memory) Resuspend(nodeID string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.node(nodeID)
	if err != nil {
		return err
	}
	if n.Status != Suspended || n.Suspension == nil {
		return fmt.Errorf("state: resuspend node %s: %w", nodeID, ErrNotSuspended)
	}
	n.Suspension.At = at
	return nil
}

func (m *Memory) Ledger(taskID string) ([]abi.LedgerEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.d.tasks[taskID]
	if !ok {
		return nil, fmt.Errorf("state: task %s: %w", taskID, ErrNotFound)
	}
	return slices.Clone(t.ledger), nil
}

// Evidence returns the node's own evidence, oldest first.
func (m *Memory) Evidence(nodeID string) ([]abi.EvidenceItem, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.node(nodeID); err != nil {
		return nil, err
	}
	var out []abi.EvidenceItem
	for _, it := range m.d.evidence {
		if it.NodeID == nodeID {
			out = append(out, it)
		}
	}
	return out, nil
}

func (m *Memory) Fingerprints(nodeID string) ([]abi.FingerprintRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.node(nodeID)
	if err != nil {
		return nil, err
	}
	return slices.Clone(n.fingerprints), nil
}

func (m *Memory) Entities() []abi.Entity {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.d.entities)
}

func (m *Memory) Shared(taskID string) (map[string]json.RawMessage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.d.tasks[taskID]
	if !ok {
		return nil, fmt.Errorf("state: task %s: %w", taskID, ErrNotFound)
	}
	return maps.Clone(t.shared), nil
}

func (m *Memory) SessionValues() map[string]json.RawMessage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.d.values)
}

func cloneGated(g *abi.GatedCall) *abi.GatedCall {
	if g == nil {
		return nil
	}
	c := *g
	c.Args = slices.Clone(g.Args)
	return &c
}

func cloneNode(n Node) Node {
	n.Upstream = slices.Clone(n.Upstream)
	n.Contract = slices.Clone(n.Contract)
	n.ToolNames = slices.Clone(n.ToolNames)
	n.Skills = slices.Clone(n.Skills)
	n.Delegatable = slices.Clone(n.Delegatable)
	n.Inputs = maps.Clone(n.Inputs)
	n.Platform = maps.Clone(n.Platform)
	n.Outputs = maps.Clone(n.Outputs)
	n.Scratch = maps.Clone(n.Scratch)
	n.Delegations = slices.Clone(n.Delegations)
	n.Gated = cloneGated(n.Gated)
	if n.Approved != nil {
		a := *n.Approved
		n.Approved = &a
	}
	if n.FollowUp != nil {
		f := *n.FollowUp
		f.ExpectedFields = slices.Clone(f.ExpectedFields)
		n.FollowUp = &f
	}
	if n.Suspension != nil {
		s := *n.Suspension
		n.Suspension = &s
	}
	return n
}

// cloneFor copies everything Apply may change when it applies effects of
// node nodeID: the session's values, entities and evidence, the node, its
// task and the node it delegates for. Every other task and node is shared
// with d, so that an Apply costs the same late in a long session as early.
func (d data) cloneFor(nodeID string) data {
	c := data{
		userMessages: d.userMessages,
		values:       maps.Clone(d.values),
		entities:     slices.Clone(d.entities),
		evidence:     slices.Clone(d.evidence),
		tasks:        maps.Clone(d.tasks),
		nodes:        maps.Clone(d.nodes),
	}
	n, ok := d.nodes[nodeID]
	if !ok {
		return c
	}
	for _, id := range []string{nodeID, n.ParentID} {
		if on, ok := d.nodes[id]; ok {
			nc := *on
			nc.Node = cloneNode(on.Node)
			nc.fingerprints = slices.Clone(on.fingerprints)
			c.nodes[id] = &nc
		}
	}
	if t, ok := d.tasks[n.TaskID]; ok {
		tc := *t
		tc.shared = maps.Clone(t.shared)
		tc.ledger = slices.Clone(t.ledger)
		tc.calls = maps.Clone(t.calls)
		c.tasks[n.TaskID] = &tc
	}
	return c
}
