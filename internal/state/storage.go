package state

import (
	"encoding/json"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/model"
)

// Storage is where a session's state is kept: records read and written
// inside one transaction. It holds no rule of the state; Rules holds them
// all, so that every store (Memory, the durable sqlstore) applies the same
// rules by the same code. A Storage keeps what it is given, returns copies,
// and says "not there" with a nil record, never with an error.
type Storage interface {
	// Update runs fn in a transaction that holds the session's write lock;
	// it keeps fn's writes when fn returns nil and none of them otherwise.
	Update(fn func(Tx) error) error
	// View runs fn in a transaction that sees one snapshot of the session.
	View(fn func(Tx) error) error
}

// NodeRecord is a node as storage keeps it: the Node without its held write
// (Gated and Approved are the approval records) and with its contract
// parsed (nil without a contract).
type NodeRecord struct {
	Node
	Parsed *contract.Contract
}

// TaskWrite is a ledger entry and the task it belongs to.
type TaskWrite struct {
	TaskID string
	Entry  abi.LedgerEntry
}

// Tx is one transaction of a Storage: the reads and writes of a session's
// records. Lists keep the order they were written in unless a method says
// otherwise.
type Tx interface {
	Task(id string) (*Task, error)
	InsertTask(t Task) error
	// UpdateTask writes the task's status and graph.
	UpdateTask(t Task) error

	Node(id string) (*NodeRecord, error)
	InsertNode(n NodeRecord) error
	// SaveNode writes everything about the node but its contract (fixed at
	// insert) and its held write.
	SaveNode(n NodeRecord) error
	// Upstream is a node's Upstream; nil for a node not stored.
	Upstream(id string) ([]string, error)
	// Children are the ids of the nodes whose ParentID is id.
	Children(id string) ([]string, error)

	// Approval is the node's held write and its approval, each nil if none.
	Approval(nodeID string) (*abi.GatedCall, *abi.ApprovedCall, error)
	// PutGated holds a write for the node, dropping any approval.
	PutGated(nodeID string, g abi.GatedCall) error
	// SetApproved records the approval of the held write (its tool and
	// digest are the held write's).
	SetApproved(nodeID string, a abi.ApprovedCall) error
	DeleteApproval(nodeID string) error

	Ledger(taskID string) ([]abi.LedgerEntry, error)
	LedgerEntry(taskID, tool, key string) (*abi.LedgerEntry, error)
	// InsertLedger adds an entry last; UpdateLedger replaces the entry of
	// the same tool and key in place.
	InsertLedger(taskID string, e abi.LedgerEntry) error
	UpdateLedger(taskID string, e abi.LedgerEntry) error
	// Writes are the session's entries in a state, each task's in ledger
	// order (the tasks in any order).
	Writes(s abi.LedgerState) ([]TaskWrite, error)

	// Evidence is the session's evidence, NodeEvidence one node's.
	Evidence() ([]abi.EvidenceItem, error)
	NodeEvidence(nodeID string) ([]abi.EvidenceItem, error)
	// PutEvidence adds an item last, removing the item of the same id;
	// UpdateEvidence replaces the item of the same id in place.
	PutEvidence(it abi.EvidenceItem) error
	UpdateEvidence(it abi.EvidenceItem) error

	// Entities are the session's entities, the last put first; PutEntity
	// puts one first, removing the entity of the same type and id.
	Entities() ([]abi.Entity, error)
	PutEntity(e abi.Entity) error

	Fingerprints(nodeID string) ([]abi.FingerprintRecord, error)
	AddFingerprint(nodeID string, r abi.FingerprintRecord) error

	Shared(taskID string) (map[string]json.RawMessage, error)
	SetShared(taskID, key string, v json.RawMessage) error
	Values() (map[string]json.RawMessage, error)
	SetValue(key string, v json.RawMessage) error

	// UserMessages are the session's last max user messages, oldest first.
	UserMessages(max int) ([]string, error)
	AddUserMessage(text string) error
	Messages(nodeID string) ([]model.Message, error)
	AppendMessages(nodeID string, msgs []model.Message) error
	FollowUps(taskID string) ([]abi.FollowUp, error)
	AddFollowUp(taskID string, f abi.FollowUp) error

	// CallArgs are the arguments kept for a write call, false if none.
	CallArgs(taskID, callID string) (json.RawMessage, bool, error)
	PutCallArgs(taskID, callID string, args json.RawMessage) error
}
