package state

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/services"
	"github.com/tidwall/gjson"
)

// Status is the status of a node or a task.
type Status string

// Statuses. A task uses RUNNING, SUSPENDED, DONE, FAILED and CANCELLED.
const (
	Running   Status = "RUNNING"
	Suspended Status = "SUSPENDED"
	Done      Status = "DONE"
	Failed    Status = "FAILED"
	Cancelled Status = "CANCELLED"
	Skipped   Status = "SKIPPED"
)

// Ended reports whether the status is final.
func (s Status) Ended() bool { return s == Done || s == Failed || s == Cancelled || s == Skipped }

// Task is one user turn's task.
type Task struct {
	ID        string
	Objective string
	Status    Status
	// Graph is the task graph as the loop last saved it (SetTaskGraph),
	// so that another process can run the task on; nil until saved.
	Graph json.RawMessage
}

// Node is one node of a task graph and everything the loop keeps about it.
// Node returns a copy; change it through the Store's methods.
type Node struct {
	ID       string
	TaskID   string
	SkillKey string
	// Depth is the delegation depth: 0 for a planned node.
	Depth int
	// ParentID is the node that delegated this one, if any.
	ParentID string
	// Upstream are the nodes whose evidence this node may use, nearest first
	// (delegated pre-nodes are added as they are created).
	Upstream []string
	// Contract is the skill's whole skill_contract as JSON (comments
	// stripped); ToolNames its business tools.
	Contract  json.RawMessage
	ToolNames []string
	// Skills are the agent's skill keys, Delegatable those this node may
	// delegate to, DelegateMaxDepth state.delegate-max-depth.
	Skills           []string
	Delegatable      []string
	DelegateMaxDepth int
	// HasDependents: another node of the graph uses this node's outputs.
	HasDependents bool
	Inputs        map[string]json.RawMessage
	// Platform are the open platform fields of the login identity of the
	// round that started the node's task (CONTRACT_SPEC §11); nil means
	// the store's (Options.Platform).
	Platform map[string]json.RawMessage
	// Target is the completion target (CONTRACT_SPEC §10.1).
	Target        string
	TargetClaimed bool

	Status     Status
	Suspension *Suspension
	// Output is builtin_node_finish's output; Reason why the node failed or
	// was cancelled.
	Output string
	Reason string
	// Stalls and Rounds are the ReAct counters, kept across suspensions.
	Stalls int
	Rounds int

	Outputs     map[string]abi.OutputValue
	Scratch     map[string]json.RawMessage
	Delegations []abi.Delegation
	// Gated is the write the WriteGate holds for approval; Approved the
	// user's CONFIRM of it while the write runs.
	Gated    *abi.GatedCall
	Approved *abi.ApprovedCall
	// FollowUp is the follow-up the user answered last; its expected
	// fields count as USER sources.
	FollowUp *abi.FollowUp
}

// Suspension is why a node waits for the user, with the node.suspend
// payload and when it started.
type Suspension struct {
	abi.NodeSuspend
	At time.Time
}

// Store is one session's runtime state.
//
// Every method is safe for concurrent use. Reads return copies.
type Store interface {
	// SessionID is the session the store holds.
	SessionID() string

	CreateTask(t Task) error
	Task(id string) (Task, error)
	SetTaskStatus(id string, s Status) error
	// SetTaskGraph saves the task's graph (JSON), replacing the last one.
	SetTaskGraph(id string, graph json.RawMessage) error

	// CreateNode adds a node to its task; Status defaults to RUNNING. A
	// contract that does not parse is an error.
	CreateNode(n Node) error
	Node(id string) (Node, error)
	// SetNodeStatus ends, cancels or skips a node; reason is kept.
	SetNodeStatus(id string, s Status, reason string) error
	SetTarget(id, tool string, claimed bool) error
	SetProgress(id string, stalls, rounds int) error

	// AddUserMessage records a user message of the session (the
	// conversation view).
	AddUserMessage(text string) error
	AppendMessages(nodeID string, msgs ...model.Message) error
	Messages(nodeID string) ([]model.Message, error)

	// Gate records the write the WriteGate deferred with APPROVAL_REQUIRED:
	// the tool, the call and its bound arguments, whose digest it computes.
	Gate(nodeID, tool, callID string, args json.RawMessage) error
	// Approve checks that the node is suspended for APPROVAL of the held
	// write with the same argument digest, then marks that write approved
	// (state.approval.approved) and resumes the node. It returns the held
	// call.
	Approve(nodeID string, at time.Time) (abi.GatedCall, error)
	// ClearApproval forgets the held and approved write once it has run.
	ClearApproval(nodeID string) error
	// AnswerFollowUp resumes a node suspended for FOLLOW_UP: the answer is
	// recorded with the question (state.followup.current, and the task's
	// answered follow-ups) and becomes a user message of the conversation.
	AnswerFollowUp(nodeID, answer string) (abi.FollowUp, error)
	// Resuspend starts a suspension of the same kind again at at (an
	// approval asked again after it expired).
	Resuspend(nodeID string, at time.Time) error

	// Views builds the state views of a node, keyed by capability
	// ("state.node", …); state.catalog is the loop's to add.
	Views(nodeID string) (map[string]json.RawMessage, error)
	// Apply validates and applies one call's effects to the node's state,
	// all or nothing.
	Apply(nodeID string, effects []abi.Effect) error

	// RecoverWrites marks every STARTED write UNKNOWN_PRE_CALL when the
	// process starts again; RecordCall and CallArgs keep a write call's
	// bound arguments for its verification; SettleUncertain records the
	// verdict on a write whose outcome was unknown (§14.3).
	RecoverWrites() ([]abi.LedgerEntry, error)
	RecordCall(taskID, callID string, args json.RawMessage) error
	CallArgs(taskID, callID string) (json.RawMessage, bool)
	SettleUncertain(taskID, tool, key string, took bool, result *abi.Observation) error

	// Reads of the shared state, for the loop and tests.
	Ledger(taskID string) ([]abi.LedgerEntry, error)
	Evidence(nodeID string) ([]abi.EvidenceItem, error)
	Fingerprints(nodeID string) ([]abi.FingerprintRecord, error)
	Entities() []abi.Entity
	Shared(taskID string) (map[string]json.RawMessage, error)
	SessionValues() map[string]json.RawMessage
}

// ArgsDigest is the digest the approval flow compares arguments by: the hex
// SHA-256 of their canonical JSON, the same value the digest host service
// gives the guards for the bound arguments.
func ArgsDigest(args json.RawMessage) string {
	sum := sha256.Sum256(services.Canonical(gjson.ParseBytes(args)))
	return hex.EncodeToString(sum[:])
}
