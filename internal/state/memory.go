package state

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/agentwarden/warden/abi"
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

// Memory is the in-memory Store of one session: the Rules over records
// kept in the process.
type Memory struct {
	*Rules
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty store for one session.
func NewMemory(opt Options) (*Memory, error) {
	if opt.SessionID == "" {
		return nil, fmt.Errorf("state: new memory store: empty session id")
	}
	r, err := NewRules(opt, &memory{d: data{values: map[string]json.RawMessage{}, tasks: map[string]*memTask{},
		nodes: map[string]*memNode{}, approvals: map[string]*memApproval{}}})
	if err != nil {
		return nil, err
	}
	return &Memory{Rules: r}, nil
}

// memory is the Storage of a Memory. One lock serialises its
// transactions; an Update that fails is undone step by step from its
// journal, so that it costs what it changed, not the session's size.
type memory struct {
	mu sync.Mutex
	d  data
}

type data struct {
	userMessages []string
	values       map[string]json.RawMessage
	entities     []abi.Entity // the last put first
	evidence     []abi.EvidenceItem
	tasks        map[string]*memTask
	nodes        map[string]*memNode
	approvals    map[string]*memApproval
}

type memTask struct {
	Task
	shared   map[string]json.RawMessage
	ledger   []abi.LedgerEntry
	answered []abi.FollowUp
	// calls are the bound arguments of write calls, by call id.
	calls map[string]json.RawMessage
}

type memNode struct {
	NodeRecord
	fingerprints []abi.FingerprintRecord
	messages     []model.Message
}

type memApproval struct {
	gated    abi.GatedCall
	approved *abi.ApprovedCall
}

func (m *memory) Update(fn func(Tx) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	tx := &memTx{d: &m.d}
	done := false
	defer func() {
		// An error or a panic in fn: undo, newest change first.
		for i := len(tx.undo) - 1; !done && i >= 0; i-- {
			tx.undo[i]()
		}
	}()
	err := fn(tx)
	done = err == nil
	return err
}

func (m *memory) View(fn func(Tx) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return fn(&memTx{d: &m.d})
}

// memTx is one transaction of a memory: reads return copies, writes
// change the records in place and journal how to undo it.
type memTx struct {
	d    *data
	undo []func()
}

// keep journals a map entry's value (or its absence) before a change.
func keep[K comparable, V any](tx *memTx, m map[K]V, k K) {
	old, had := m[k]
	tx.undo = append(tx.undo, func() {
		if had {
			m[k] = old
		} else {
			delete(m, k)
		}
	})
}

// keepSlice journals a slice before an append or a replacement (not before
// a change of one of its elements: keepAt).
func keepSlice[T any](tx *memTx, p *[]T) {
	old := *p
	tx.undo = append(tx.undo, func() { *p = old })
}

// keepAt journals one element of a slice before it is changed.
func keepAt[T any](tx *memTx, s []T, i int) {
	old := s[i]
	tx.undo = append(tx.undo, func() { s[i] = old })
}

func (tx *memTx) task(id string) (*memTask, error) {
	t, ok := tx.d.tasks[id]
	if !ok {
		return nil, fmt.Errorf("state: task %s: %w", id, ErrNotFound)
	}
	return t, nil
}

func (tx *memTx) node(id string) (*memNode, error) {
	n, ok := tx.d.nodes[id]
	if !ok {
		return nil, fmt.Errorf("state: node %s: %w", id, ErrNotFound)
	}
	return n, nil
}

func (tx *memTx) Task(id string) (*Task, error) {
	t, ok := tx.d.tasks[id]
	if !ok {
		return nil, nil
	}
	out := t.Task
	out.Graph = slices.Clone(out.Graph)
	return &out, nil
}

func (tx *memTx) InsertTask(t Task) error {
	keep(tx, tx.d.tasks, t.ID)
	t.Graph = slices.Clone(t.Graph)
	tx.d.tasks[t.ID] = &memTask{Task: t, shared: map[string]json.RawMessage{}}
	return nil
}

func (tx *memTx) UpdateTask(t Task) error {
	mt, err := tx.task(t.ID)
	if err != nil {
		return err
	}
	old := mt.Task
	tx.undo = append(tx.undo, func() { mt.Task = old })
	mt.Status, mt.Graph = t.Status, slices.Clone(t.Graph)
	return nil
}

func (tx *memTx) Node(id string) (*NodeRecord, error) {
	n, ok := tx.d.nodes[id]
	if !ok {
		return nil, nil
	}
	return &NodeRecord{Node: cloneNode(n.Node), Parsed: n.Parsed}, nil
}

func (tx *memTx) InsertNode(n NodeRecord) error {
	keep(tx, tx.d.nodes, n.ID)
	n.Node = cloneNode(n.Node)
	n.Gated, n.Approved = nil, nil
	tx.d.nodes[n.ID] = &memNode{NodeRecord: n}
	return nil
}

func (tx *memTx) SaveNode(n NodeRecord) error {
	mn, err := tx.node(n.ID)
	if err != nil {
		return err
	}
	old := mn.NodeRecord
	tx.undo = append(tx.undo, func() { mn.NodeRecord = old })
	c := cloneNode(n.Node)
	c.Contract, c.Gated, c.Approved = old.Contract, nil, nil
	mn.Node = c
	return nil
}

func (tx *memTx) Upstream(id string) ([]string, error) {
	if n, ok := tx.d.nodes[id]; ok {
		return slices.Clone(n.Upstream), nil
	}
	return nil, nil
}

func (tx *memTx) Children(id string) ([]string, error) {
	var out []string
	for cid, n := range tx.d.nodes {
		if n.ParentID == id {
			out = append(out, cid)
		}
	}
	return out, nil
}

func (tx *memTx) Approval(nodeID string) (*abi.GatedCall, *abi.ApprovedCall, error) {
	a, ok := tx.d.approvals[nodeID]
	if !ok {
		return nil, nil, nil
	}
	var ap *abi.ApprovedCall
	if a.approved != nil {
		c := *a.approved
		ap = &c
	}
	return cloneGated(&a.gated), ap, nil
}

func (tx *memTx) PutGated(nodeID string, g abi.GatedCall) error {
	keep(tx, tx.d.approvals, nodeID)
	tx.d.approvals[nodeID] = &memApproval{gated: *cloneGated(&g)}
	return nil
}

func (tx *memTx) SetApproved(nodeID string, a abi.ApprovedCall) error {
	old, ok := tx.d.approvals[nodeID]
	if !ok {
		return nil
	}
	keep(tx, tx.d.approvals, nodeID)
	tx.d.approvals[nodeID] = &memApproval{gated: old.gated, approved: &a}
	return nil
}

func (tx *memTx) DeleteApproval(nodeID string) error {
	keep(tx, tx.d.approvals, nodeID)
	delete(tx.d.approvals, nodeID)
	return nil
}

func (tx *memTx) Ledger(taskID string) ([]abi.LedgerEntry, error) {
	if t, ok := tx.d.tasks[taskID]; ok {
		return slices.Clone(t.ledger), nil
	}
	return nil, nil
}

func ledgerIndex(l []abi.LedgerEntry, tool, key string) int {
	return slices.IndexFunc(l, func(e abi.LedgerEntry) bool { return e.Tool == tool && e.Key == key })
}

func (tx *memTx) LedgerEntry(taskID, tool, key string) (*abi.LedgerEntry, error) {
	t, ok := tx.d.tasks[taskID]
	if !ok {
		return nil, nil
	}
	if i := ledgerIndex(t.ledger, tool, key); i >= 0 {
		e := t.ledger[i]
		return &e, nil
	}
	return nil, nil
}

func (tx *memTx) InsertLedger(taskID string, e abi.LedgerEntry) error {
	t, err := tx.task(taskID)
	if err != nil {
		return err
	}
	keepSlice(tx, &t.ledger)
	t.ledger = append(t.ledger, e)
	return nil
}

func (tx *memTx) UpdateLedger(taskID string, e abi.LedgerEntry) error {
	t, err := tx.task(taskID)
	if err != nil {
		return err
	}
	if i := ledgerIndex(t.ledger, e.Tool, e.Key); i >= 0 {
		keepAt(tx, t.ledger, i)
		t.ledger[i] = e
	}
	return nil
}

func (tx *memTx) Writes(s abi.LedgerState) ([]TaskWrite, error) {
	var out []TaskWrite
	for id, t := range tx.d.tasks {
		for _, e := range t.ledger {
			if e.State == s {
				out = append(out, TaskWrite{TaskID: id, Entry: e})
			}
		}
	}
	return out, nil
}

func (tx *memTx) Evidence() ([]abi.EvidenceItem, error) { return slices.Clone(tx.d.evidence), nil }

func (tx *memTx) NodeEvidence(nodeID string) ([]abi.EvidenceItem, error) {
	var out []abi.EvidenceItem
	for _, it := range tx.d.evidence {
		if it.NodeID == nodeID {
			out = append(out, it)
		}
	}
	return out, nil
}

func (tx *memTx) PutEvidence(it abi.EvidenceItem) error {
	keepSlice(tx, &tx.d.evidence)
	same := func(x abi.EvidenceItem) bool { return x.ID == it.ID }
	if slices.ContainsFunc(tx.d.evidence, same) {
		tx.d.evidence = slices.DeleteFunc(slices.Clone(tx.d.evidence), same)
	}
	tx.d.evidence = append(tx.d.evidence, it)
	return nil
}

func (tx *memTx) UpdateEvidence(it abi.EvidenceItem) error {
	if i := slices.IndexFunc(tx.d.evidence, func(x abi.EvidenceItem) bool { return x.ID == it.ID }); i >= 0 {
		keepAt(tx, tx.d.evidence, i)
		tx.d.evidence[i] = it
	}
	return nil
}

func (tx *memTx) Entities() ([]abi.Entity, error) { return slices.Clone(tx.d.entities), nil }

func (tx *memTx) PutEntity(e abi.Entity) error {
	keepSlice(tx, &tx.d.entities)
	out := make([]abi.Entity, 0, len(tx.d.entities)+1)
	out = append(out, e)
	for _, x := range tx.d.entities {
		if x.Type != e.Type || x.ID != e.ID {
			out = append(out, x)
		}
	}
	tx.d.entities = out
	return nil
}

func (tx *memTx) Fingerprints(nodeID string) ([]abi.FingerprintRecord, error) {
	if n, ok := tx.d.nodes[nodeID]; ok {
		return slices.Clone(n.fingerprints), nil
	}
	return nil, nil
}

func (tx *memTx) AddFingerprint(nodeID string, r abi.FingerprintRecord) error {
	n, err := tx.node(nodeID)
	if err != nil {
		return err
	}
	keepSlice(tx, &n.fingerprints)
	n.fingerprints = append(n.fingerprints, r)
	return nil
}

func (tx *memTx) Shared(taskID string) (map[string]json.RawMessage, error) {
	if t, ok := tx.d.tasks[taskID]; ok {
		return maps.Clone(t.shared), nil
	}
	return map[string]json.RawMessage{}, nil
}

func (tx *memTx) SetShared(taskID, key string, v json.RawMessage) error {
	t, err := tx.task(taskID)
	if err != nil {
		return err
	}
	keep(tx, t.shared, key)
	t.shared[key] = v
	return nil
}

func (tx *memTx) Values() (map[string]json.RawMessage, error) { return maps.Clone(tx.d.values), nil }

func (tx *memTx) SetValue(key string, v json.RawMessage) error {
	keep(tx, tx.d.values, key)
	tx.d.values[key] = v
	return nil
}

func (tx *memTx) UserMessages(max int) ([]string, error) {
	return slices.Clone(last(tx.d.userMessages, max)), nil
}

func (tx *memTx) AddUserMessage(text string) error {
	keepSlice(tx, &tx.d.userMessages)
	tx.d.userMessages = append(tx.d.userMessages, text)
	return nil
}

func (tx *memTx) Messages(nodeID string) ([]model.Message, error) {
	if n, ok := tx.d.nodes[nodeID]; ok {
		return slices.Clone(n.messages), nil
	}
	return nil, nil
}

func (tx *memTx) AppendMessages(nodeID string, msgs []model.Message) error {
	n, err := tx.node(nodeID)
	if err != nil {
		return err
	}
	keepSlice(tx, &n.messages)
	n.messages = append(n.messages, msgs...)
	return nil
}

func (tx *memTx) FollowUps(taskID string) ([]abi.FollowUp, error) {
	if t, ok := tx.d.tasks[taskID]; ok {
		return slices.Clone(t.answered), nil
	}
	return nil, nil
}

func (tx *memTx) AddFollowUp(taskID string, f abi.FollowUp) error {
	t, err := tx.task(taskID)
	if err != nil {
		return err
	}
	keepSlice(tx, &t.answered)
	t.answered = append(t.answered, f)
	return nil
}

func (tx *memTx) CallArgs(taskID, callID string) (json.RawMessage, bool, error) {
	t, ok := tx.d.tasks[taskID]
	if !ok {
		return nil, false, nil
	}
	a, ok := t.calls[callID]
	return slices.Clone(a), ok, nil
}

func (tx *memTx) PutCallArgs(taskID, callID string, args json.RawMessage) error {
	t, err := tx.task(taskID)
	if err != nil {
		return err
	}
	if t.calls == nil {
		t.calls = map[string]json.RawMessage{}
	}
	keep(tx, t.calls, callID)
	t.calls[callID] = slices.Clone(args)
	return nil
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
