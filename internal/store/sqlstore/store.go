package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/state"
)

// Store is the durable state.Store of one session.
type Store struct {
	db  *DB
	opt state.Options
}

var _ state.Store = (*Store)(nil)

// Session returns the Store of the session opt names, creating the session
// if the database has none by that id. The options are the same as
// state.Memory's, with the same defaults; they configure the store, they
// are not state, and a later Session call may pass others.
func (s *DB) Session(ctx context.Context, opt state.Options) (*Store, error) {
	if opt.SessionID == "" {
		return nil, fmt.Errorf("sqlstore: session: empty session id")
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
	q := `INSERT INTO sessions (id, created_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`
	if _, err := s.db.ExecContext(ctx, s.rebind(q), opt.SessionID, opt.Now().UTC().Format(time.RFC3339)); err != nil {
		return nil, fmt.Errorf("sqlstore: session %s: %w", opt.SessionID, err)
	}
	return &Store{db: s, opt: opt}, nil
}

// SessionID returns the session's id.
func (s *Store) SessionID() string { return s.opt.SessionID }

// tx is one transaction of the store's session, with its queries rebound.
type tx struct {
	s  *Store
	tx *sql.Tx
}

func (t *tx) exec(q string, args ...any) (sql.Result, error) {
	return t.tx.Exec(t.s.db.rebind(q), args...)
}

func (t *tx) query(q string, args ...any) (*sql.Rows, error) {
	return t.tx.Query(t.s.db.rebind(q), args...)
}

func (t *tx) row(q string, args ...any) *sql.Row {
	return t.tx.QueryRow(t.s.db.rebind(q), args...)
}

// write runs fn in a transaction that holds the session's write lock and
// commits when fn returns nil.
func (s *Store) write(fn func(t *tx) error) error { return s.run(true, fn) }

// read runs fn in a transaction that sees one snapshot of the session.
func (s *Store) read(fn func(t *tx) error) error { return s.run(false, fn) }

func (s *Store) run(lock bool, fn func(t *tx) error) error {
	ctx := context.Background()
	var opts *sql.TxOptions
	if !lock && s.db.dialect == Postgres {
		// One snapshot for every query of a read, whatever other
		// instances commit meanwhile.
		opts = &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
	}
	sqlTx, err := s.db.db.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("sqlstore: begin: %w", err)
	}
	defer sqlTx.Rollback()
	t := &tx{s: s, tx: sqlTx}
	if lock {
		q := `SELECT id FROM sessions WHERE id = ?`
		if s.db.dialect == Postgres {
			q += ` FOR UPDATE`
		}
		var id string
		if err := t.row(q, s.opt.SessionID).Scan(&id); err != nil {
			return fmt.Errorf("sqlstore: session %s: %w", s.opt.SessionID, err)
		}
	}
	if err := fn(t); err != nil {
		return err
	}
	if err := sqlTx.Commit(); err != nil {
		return fmt.Errorf("sqlstore: commit: %w", err)
	}
	return nil
}

// nextSeq is the next position in an ordered list of the session; the
// session's write lock makes it unique.
func (t *tx) nextSeq(table, where string, args ...any) (int64, error) {
	var n int64
	err := t.row(`SELECT COALESCE(MAX(seq), 0) + 1 FROM `+table+` WHERE session_id = ?`+where,
		append([]any{t.s.opt.SessionID}, args...)...).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("sqlstore: %s: %w", table, err)
	}
	return n, nil
}

func marshal(v any) string {
	b, err := abi.Marshal(v)
	if err != nil {
		// Every value stored here is built from JSON-safe types.
		panic(fmt.Sprintf("sqlstore: marshal %T: %v", v, err))
	}
	return string(b)
}

func (s *Store) CreateTask(tk state.Task) error {
	if tk.ID == "" {
		return fmt.Errorf("sqlstore: create task: empty id")
	}
	if tk.Status == "" {
		tk.Status = state.Running
	}
	return s.write(func(t *tx) error {
		if _, err := t.task(tk.ID); err == nil {
			return fmt.Errorf("sqlstore: task %s: %w", tk.ID, state.ErrExists)
		} else if !errors.Is(err, state.ErrNotFound) {
			return err
		}
		_, err := t.exec(`INSERT INTO tasks (session_id, id, objective, status) VALUES (?, ?, ?, ?)`,
			s.opt.SessionID, tk.ID, tk.Objective, string(tk.Status))
		return wrap("create task "+tk.ID, err)
	})
}

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("sqlstore: %s: %w", what, err)
}

func (t *tx) task(id string) (state.Task, error) {
	tk := state.Task{ID: id}
	var status, graph string
	err := t.row(`SELECT objective, status, graph FROM tasks WHERE session_id = ? AND id = ?`, t.s.opt.SessionID, id).Scan(&tk.Objective, &status, &graph)
	if errors.Is(err, sql.ErrNoRows) {
		return state.Task{}, fmt.Errorf("sqlstore: task %s: %w", id, state.ErrNotFound)
	}
	if err != nil {
		return state.Task{}, wrap("task "+id, err)
	}
	tk.Status = state.Status(status)
	if graph != "" {
		tk.Graph = json.RawMessage(graph)
	}
	return tk, nil
}

func (s *Store) Task(id string) (state.Task, error) {
	var tk state.Task
	err := s.read(func(t *tx) (err error) {
		tk, err = t.task(id)
		return err
	})
	return tk, err
}

func (s *Store) SetTaskStatus(id string, st state.Status) error {
	return s.write(func(t *tx) error {
		if _, err := t.task(id); err != nil {
			return err
		}
		_, err := t.exec(`UPDATE tasks SET status = ? WHERE session_id = ? AND id = ?`, string(st), s.opt.SessionID, id)
		return wrap("task "+id, err)
	})
}

func (s *Store) SetTaskGraph(id string, graph json.RawMessage) error {
	if !json.Valid(graph) {
		return fmt.Errorf("sqlstore: task %s: graph is not JSON", id)
	}
	return s.write(func(t *tx) error {
		if _, err := t.task(id); err != nil {
			return err
		}
		_, err := t.exec(`UPDATE tasks SET graph = ? WHERE session_id = ? AND id = ?`, string(graph), s.opt.SessionID, id)
		return wrap("task "+id, err)
	})
}

// node is a node as stored: the state.Node without its held write, which
// lives in approvals, and its parsed contract.
type node struct {
	state.Node
	contract *contract.Contract
}

func (s *Store) CreateNode(n state.Node) error {
	if n.ID == "" {
		return fmt.Errorf("sqlstore: create node: empty id")
	}
	nn := &node{Node: n}
	if len(n.Contract) > 0 {
		src, err := contract.StripComments(n.Contract)
		if err != nil {
			return fmt.Errorf("sqlstore: node %s: contract: %w", n.ID, err)
		}
		c, _, err := contract.Parse(n.SkillKey, src)
		if err != nil {
			return fmt.Errorf("sqlstore: node %s: contract: %w", n.ID, err)
		}
		nn.contract, nn.Contract = c, src
	}
	if nn.Status == "" {
		nn.Status = state.Running
	}
	return s.write(func(t *tx) error {
		if _, err := t.node(n.ID); err == nil {
			return fmt.Errorf("sqlstore: node %s: %w", n.ID, state.ErrExists)
		} else if !errors.Is(err, state.ErrNotFound) {
			return err
		}
		if _, err := t.task(n.TaskID); err != nil {
			return fmt.Errorf("sqlstore: node %s: task %s: %w", n.ID, n.TaskID, state.ErrNotFound)
		}
		if nn.ParentID != "" {
			p, err := t.node(nn.ParentID)
			if err != nil && !errors.Is(err, state.ErrNotFound) {
				return err
			}
			if err == nil && !slices.Contains(p.Upstream, nn.ID) {
				p.Upstream = append([]string{nn.ID}, p.Upstream...)
				if err := t.saveNode(p); err != nil {
					return err
				}
			}
		}
		_, err := t.exec(`INSERT INTO nodes (session_id, id, task_id, parent_id, status, contract, doc) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			s.opt.SessionID, nn.ID, nn.TaskID, nn.ParentID, string(nn.Status), string(nn.Contract), nodeDoc(nn))
		return wrap("create node "+n.ID, err)
	})
}

// nodeDoc is the JSON of everything about a node but its contract and
// held write, which have their own columns and table.
func nodeDoc(n *node) string {
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

// node loads a node without its held write.
func (t *tx) node(id string) (*node, error) {
	var src, doc string
	err := t.row(`SELECT contract, doc FROM nodes WHERE session_id = ? AND id = ?`, t.s.opt.SessionID, id).Scan(&src, &doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlstore: node %s: %w", id, state.ErrNotFound)
	}
	if err != nil {
		return nil, wrap("node "+id, err)
	}
	n := &node{}
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
		n.contract = c
	}
	return n, nil
}

func (t *tx) saveNode(n *node) error {
	_, err := t.exec(`UPDATE nodes SET status = ?, doc = ? WHERE session_id = ? AND id = ?`,
		string(n.Status), nodeDoc(n), t.s.opt.SessionID, n.ID)
	return wrap("save node "+n.ID, err)
}

// approval loads the write held for a node and its approval, if any.
func (t *tx) approval(nodeID string) (*abi.GatedCall, *abi.ApprovedCall, error) {
	var g abi.GatedCall
	var args string
	var approvedAt sql.NullString
	err := t.row(`SELECT tool, call_id, args, args_digest, gated_at, approved_at FROM approvals WHERE session_id = ? AND node_id = ?`,
		t.s.opt.SessionID, nodeID).Scan(&g.Tool, &g.CallID, &args, &g.ArgsDigest, &g.At, &approvedAt)
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

func (s *Store) Node(id string) (state.Node, error) {
	var out state.Node
	err := s.read(func(t *tx) error {
		n, err := t.node(id)
		if err != nil {
			return err
		}
		if n.Gated, n.Approved, err = t.approval(id); err != nil {
			return err
		}
		out = n.Node
		return nil
	})
	return out, err
}

// update loads a node, lets fn change it and saves it.
func (s *Store) update(id string, fn func(t *tx, n *node) error) error {
	return s.write(func(t *tx) error {
		n, err := t.node(id)
		if err != nil {
			return err
		}
		if err := fn(t, n); err != nil {
			return err
		}
		return t.saveNode(n)
	})
}

func (s *Store) SetNodeStatus(id string, st state.Status, reason string) error {
	return s.update(id, func(t *tx, n *node) error {
		n.Status, n.Reason = st, reason
		if st != state.Suspended {
			n.Suspension = nil
		}
		if st.Ended() {
			return t.settleDelegation(n)
		}
		return nil
	})
}

func (s *Store) SetTarget(id, tool string, claimed bool) error {
	return s.update(id, func(_ *tx, n *node) error {
		n.Target, n.TargetClaimed = tool, claimed
		return nil
	})
}

func (s *Store) SetProgress(id string, stalls, rounds int) error {
	return s.update(id, func(_ *tx, n *node) error {
		n.Stalls, n.Rounds = stalls, rounds
		return nil
	})
}

func (t *tx) addUserMessage(text string) error {
	seq, err := t.nextSeq("user_messages", "")
	if err != nil {
		return err
	}
	_, err = t.exec(`INSERT INTO user_messages (session_id, seq, text) VALUES (?, ?, ?)`, t.s.opt.SessionID, seq, text)
	return wrap("user message", err)
}

func (s *Store) AddUserMessage(text string) error {
	return s.write(func(t *tx) error { return t.addUserMessage(text) })
}

func (s *Store) AppendMessages(nodeID string, msgs ...model.Message) error {
	return s.write(func(t *tx) error {
		if _, err := t.node(nodeID); err != nil {
			return err
		}
		seq, err := t.nextSeq("messages", " AND node_id = ?", nodeID)
		if err != nil {
			return err
		}
		for i, m := range msgs {
			if _, err := t.exec(`INSERT INTO messages (session_id, node_id, seq, doc) VALUES (?, ?, ?, ?)`,
				s.opt.SessionID, nodeID, seq+int64(i), marshal(m)); err != nil {
				return wrap("messages of node "+nodeID, err)
			}
		}
		return nil
	})
}

// docs reads the doc column of a query's rows into a slice.
func docs[T any](t *tx, q string, args ...any) ([]T, error) {
	rows, err := t.query(q, args...)
	if err != nil {
		return nil, wrap("query", err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var doc string
		if err := rows.Scan(&doc); err != nil {
			return nil, wrap("scan", err)
		}
		var v T
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			return nil, wrap("decode", err)
		}
		out = append(out, v)
	}
	return out, wrap("rows", rows.Err())
}

func (s *Store) Messages(nodeID string) ([]model.Message, error) {
	var out []model.Message
	err := s.read(func(t *tx) (err error) {
		if _, err := t.node(nodeID); err != nil {
			return err
		}
		out, err = docs[model.Message](t, `SELECT doc FROM messages WHERE session_id = ? AND node_id = ? ORDER BY seq`, s.opt.SessionID, nodeID)
		return err
	})
	return out, err
}

// Gate holds the write, server side, replacing any held before it and
// dropping its approval: a CONFIRM binds one held write only.
func (s *Store) Gate(nodeID, tool, callID string, args json.RawMessage) error {
	return s.write(func(t *tx) error {
		if _, err := t.node(nodeID); err != nil {
			return err
		}
		if tool == "" || !json.Valid(args) {
			return fmt.Errorf("sqlstore: gate %s on node %s: tool and JSON arguments are required", tool, nodeID)
		}
		_, err := t.exec(`INSERT INTO approvals (session_id, node_id, tool, call_id, args, args_digest, gated_at, approved_at)
VALUES (?, ?, ?, ?, ?, ?, ?, NULL)
ON CONFLICT (session_id, node_id) DO UPDATE SET tool = excluded.tool, call_id = excluded.call_id, args = excluded.args,
    args_digest = excluded.args_digest, gated_at = excluded.gated_at, approved_at = NULL`,
			s.opt.SessionID, nodeID, tool, callID, string(args), state.ArgsDigest(args), s.opt.Now().UTC().Format(time.RFC3339))
		return wrap("gate on node "+nodeID, err)
	})
}

// Approve is single use: it resumes the node, so a second CONFIRM finds it
// no longer suspended for approval.
func (s *Store) Approve(nodeID string, at time.Time) (abi.GatedCall, error) {
	var out abi.GatedCall
	err := s.update(nodeID, func(t *tx, n *node) error {
		sp := n.Suspension
		if n.Status != state.Suspended || sp == nil || sp.Kind != abi.SuspendApproval {
			return fmt.Errorf("sqlstore: approve node %s: %w", nodeID, state.ErrNotSuspended)
		}
		g, _, err := t.approval(nodeID)
		if err != nil {
			return err
		}
		if g == nil {
			return fmt.Errorf("sqlstore: approve node %s: %w", nodeID, state.ErrNotGated)
		}
		// What runs must be what the user saw: the held arguments, their
		// digest now, and the digest in the question all agree.
		if g.Tool != sp.Tool || g.ArgsDigest != sp.ArgsDigest || state.ArgsDigest(g.Args) != sp.ArgsDigest {
			return fmt.Errorf("sqlstore: approve %s on node %s: %w", g.Tool, nodeID, state.ErrDigestMismatch)
		}
		if _, err := t.exec(`UPDATE approvals SET approved_at = ? WHERE session_id = ? AND node_id = ?`,
			at.UTC().Format(time.RFC3339), s.opt.SessionID, nodeID); err != nil {
			return wrap("approve node "+nodeID, err)
		}
		n.Status, n.Suspension = state.Running, nil
		out = *g
		return nil
	})
	return out, err
}

func (s *Store) ClearApproval(nodeID string) error {
	return s.write(func(t *tx) error {
		if _, err := t.node(nodeID); err != nil {
			return err
		}
		_, err := t.exec(`DELETE FROM approvals WHERE session_id = ? AND node_id = ?`, s.opt.SessionID, nodeID)
		return wrap("clear approval of node "+nodeID, err)
	})
}

func (s *Store) AnswerFollowUp(nodeID, answer string) (abi.FollowUp, error) {
	var f abi.FollowUp
	err := s.update(nodeID, func(t *tx, n *node) error {
		sp := n.Suspension
		if n.Status != state.Suspended || sp == nil || sp.Kind != abi.SuspendFollowUp {
			return fmt.Errorf("sqlstore: answer node %s: %w", nodeID, state.ErrNotSuspended)
		}
		f = abi.FollowUp{Question: sp.Question, ExpectedFields: slices.Clone(sp.ExpectedFields), Answer: answer}
		n.FollowUp = &f
		if _, err := t.task(n.TaskID); err == nil {
			seq, err := t.nextSeq("followups", " AND task_id = ?", n.TaskID)
			if err != nil {
				return err
			}
			if _, err := t.exec(`INSERT INTO followups (session_id, task_id, seq, doc) VALUES (?, ?, ?, ?)`,
				s.opt.SessionID, n.TaskID, seq, marshal(f)); err != nil {
				return wrap("follow-up of node "+nodeID, err)
			}
		}
		if err := t.addUserMessage(answer); err != nil {
			return err
		}
		n.Status, n.Suspension = state.Running, nil
		return nil
	})
	return f, err
}

func (s *Store) Resuspend(nodeID string, at time.Time) error {
	return s.update(nodeID, func(_ *tx, n *node) error {
		if n.Status != state.Suspended || n.Suspension == nil {
			return fmt.Errorf("sqlstore: resuspend node %s: %w", nodeID, state.ErrNotSuspended)
		}
		n.Suspension.At = at
		return nil
	})
}
