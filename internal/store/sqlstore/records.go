package sqlstore

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/state"
)

// The rows of tasks, nodes and held writes.

func (t *tx) Task(id string) (*state.Task, error) {
	tk := state.Task{ID: id}
	var status, graph string
	err := t.row(`SELECT objective, status, graph FROM tasks WHERE session_id = ? AND id = ?`, t.sid(), id).Scan(&tk.Objective, &status, &graph)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap("task "+id, err)
	}
	tk.Status = state.Status(status)
	if graph != "" {
		tk.Graph = json.RawMessage(graph)
	}
	return &tk, nil
}

func (t *tx) InsertTask(tk state.Task) error {
	_, err := t.exec(`INSERT INTO tasks (session_id, id, objective, status, graph) VALUES (?, ?, ?, ?, ?)`,
		t.sid(), tk.ID, tk.Objective, string(tk.Status), string(tk.Graph))
	return wrap("create task "+tk.ID, err)
}

func (t *tx) UpdateTask(tk state.Task) error {
	_, err := t.exec(`UPDATE tasks SET status = ?, graph = ? WHERE session_id = ? AND id = ?`,
		string(tk.Status), string(tk.Graph), t.sid(), tk.ID)
	return wrap("task "+tk.ID, err)
}

// nodeDoc is the JSON of everything about a node but its contract and
// held write, which have their own column and table.
func nodeDoc(n state.NodeRecord) string {
	d := n.Node
	d.Contract, d.Gated, d.Approved = nil, nil, nil
	if d.Outputs == nil {
		d.Outputs = map[string]abi.OutputValue{}
	}
	if d.Scratch == nil {
		d.Scratch = map[string]json.RawMessage{}
	}
	return marshal(d)
}

// Node loads a node without its held write, its contract parsed.
func (t *tx) Node(id string) (*state.NodeRecord, error) {
	var src, doc string
	err := t.row(`SELECT contract, doc FROM nodes WHERE session_id = ? AND id = ?`, t.sid(), id).Scan(&src, &doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap("node "+id, err)
	}
	n := &state.NodeRecord{}
	if err := json.Unmarshal([]byte(doc), &n.Node); err != nil {
		return nil, wrap("node "+id, err)
	}
	n.Contract = nil // the doc's null
	if src != "" {
		n.Contract = json.RawMessage(src)
		c, _, err := contract.Parse(n.SkillKey, n.Contract)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: node %s: contract: %w", id, err)
		}
		n.Parsed = c
	}
	return n, nil
}

func (t *tx) InsertNode(n state.NodeRecord) error {
	_, err := t.exec(`INSERT INTO nodes (session_id, id, task_id, parent_id, status, contract, doc) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		t.sid(), n.ID, n.TaskID, n.ParentID, string(n.Status), string(n.Contract), nodeDoc(n))
	return wrap("create node "+n.ID, err)
}

func (t *tx) SaveNode(n state.NodeRecord) error {
	_, err := t.exec(`UPDATE nodes SET status = ?, doc = ? WHERE session_id = ? AND id = ?`,
		string(n.Status), nodeDoc(n), t.sid(), n.ID)
	return wrap("save node "+n.ID, err)
}

// Upstream reads a node's Upstream alone; a node not stored has none.
func (t *tx) Upstream(id string) ([]string, error) {
	var doc string
	err := t.row(`SELECT doc FROM nodes WHERE session_id = ? AND id = ?`, t.sid(), id).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap("node "+id, err)
	}
	var d struct{ Upstream []string }
	if err := json.Unmarshal([]byte(doc), &d); err != nil {
		return nil, wrap("node "+id, err)
	}
	return d.Upstream, nil
}

func (t *tx) Children(id string) ([]string, error) {
	rows, err := t.query(`SELECT id FROM nodes WHERE session_id = ? AND parent_id = ?`, t.sid(), id)
	if err != nil {
		return nil, wrap("nodes", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, wrap("nodes", err)
		}
		out = append(out, c)
	}
	return out, wrap("nodes", rows.Err())
}

// Approval loads the write held for a node and its approval, if any.
func (t *tx) Approval(nodeID string) (*abi.GatedCall, *abi.ApprovedCall, error) {
	var g abi.GatedCall
	var args string
	var approvedAt sql.NullString
	err := t.row(`SELECT tool, call_id, args, args_digest, gated_at, approved_at FROM approvals WHERE session_id = ? AND node_id = ?`,
		t.sid(), nodeID).Scan(&g.Tool, &g.CallID, &args, &g.ArgsDigest, &g.At, &approvedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, wrap("approval of node "+nodeID, err)
	}
	g.Args = json.RawMessage(args)
	var a *abi.ApprovedCall
	if approvedAt.Valid {
		a = &abi.ApprovedCall{Tool: g.Tool, ArgsDigest: g.ArgsDigest, ApprovedAt: approvedAt.String}
	}
	return &g, a, nil
}

func (t *tx) PutGated(nodeID string, g abi.GatedCall) error {
	_, err := t.exec(`INSERT INTO approvals (session_id, node_id, tool, call_id, args, args_digest, gated_at, approved_at)
VALUES (?, ?, ?, ?, ?, ?, ?, NULL)
ON CONFLICT (session_id, node_id) DO UPDATE SET tool = excluded.tool, call_id = excluded.call_id, args = excluded.args,
    args_digest = excluded.args_digest, gated_at = excluded.gated_at, approved_at = NULL`,
		t.sid(), nodeID, g.Tool, g.CallID, string(g.Args), g.ArgsDigest, g.At)
	return wrap("gate on node "+nodeID, err)
}

// SetApproved keeps the approval's time; its tool and digest are the held
// write's.
func (t *tx) SetApproved(nodeID string, a abi.ApprovedCall) error {
	_, err := t.exec(`UPDATE approvals SET approved_at = ? WHERE session_id = ? AND node_id = ?`, a.ApprovedAt, t.sid(), nodeID)
	return wrap("approve node "+nodeID, err)
}

func (t *tx) DeleteApproval(nodeID string) error {
	_, err := t.exec(`DELETE FROM approvals WHERE session_id = ? AND node_id = ?`, t.sid(), nodeID)
	return wrap("clear approval of node "+nodeID, err)
}
