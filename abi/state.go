package abi

import "encoding/json"

// State views: what the host puts under Request.State[capability] for a
// plugin granted that capability. Plugins read them with gjson paths (the
// JSON names below); the host builds them from its store. Every view is a
// snapshot taken before the call; changes come back as effects.

// LedgerState is the state of one write in the write ledger (CONTRACT_SPEC §14).
type LedgerState string

// Ledger states.
const (
	LedgerStarted        LedgerState = "STARTED"          // pre-registered, call under way
	LedgerUnknown        LedgerState = "UNKNOWN"          // called, outcome not known (timeout, IO)
	LedgerUnknownPreCall LedgerState = "UNKNOWN_PRE_CALL" // registered, process died before the call returned
	LedgerSuccess        LedgerState = "SUCCESS"          // called and succeeded
	LedgerFailed         LedgerState = "FAILED"           // called and failed, or business failure
)

// Open reports whether the write is not settled (blocks finish and repeats).
func (s LedgerState) Open() bool {
	return s == LedgerStarted || s == LedgerUnknown || s == LedgerUnknownPreCall
}

// LedgerView is state.ledger: this task's writes.
type LedgerView struct {
	Entries []LedgerEntry `json:"entries"`
	// BypassTools is the configured state.write-confirm-bypass-tools.
	BypassTools []string `json:"bypassTools,omitempty"`
}

// LedgerEntry is one write, keyed by tool + idempotency key (§14.2).
type LedgerEntry struct {
	Tool       string      `json:"tool"`
	Key        string      `json:"key"`
	State      LedgerState `json:"state"`
	ArgsDigest string      `json:"argsDigest,omitempty"`
	CallID     string      `json:"callId,omitempty"`
	NodeID     string      `json:"nodeId,omitempty"`
	// BusinessOK is false for a call that ran but failed the contract's success.
	BusinessOK *bool `json:"businessOk,omitempty"`
	// Result is the observation of a settled write (reused on SUCCESS).
	Result *Observation `json:"result,omitempty"`
	// Approved is true when the write ran after a user's CONFIRM.
	Approved  bool   `json:"approved,omitempty"`
	UpdatedAt string `json:"updatedAt,omitempty"`
	// StartedAt is when the write was reserved, just before its tool was
	// called (RFC 3339, UTC, host clock). It is kept through recovery and
	// settling: a negative verification before StartedAt plus the tool's
	// call timeout is not conclusive (the tool may still be on the call).
	StartedAt string `json:"startedAt,omitempty"`
}

// ApprovalView is state.approval: the write held by the gate, if any, and
// the approval this call executes, if any.
type ApprovalView struct {
	Gated    *GatedCall    `json:"gated,omitempty"`
	Approved *ApprovedCall `json:"approved,omitempty"`
}

// GatedCall is a write call the WriteGate deferred for approval.
type GatedCall struct {
	Tool       string          `json:"tool"`
	CallID     string          `json:"callId,omitempty"`
	Args       json.RawMessage `json:"args"` // bound arguments
	ArgsDigest string          `json:"argsDigest"`
	At         string          `json:"at,omitempty"`
}

// ApprovedCall is the user's CONFIRM of a gated call; the chain runs that
// call with it (skipping approval and fingerprint).
type ApprovedCall struct {
	Tool       string `json:"tool"`
	ArgsDigest string `json:"argsDigest"`
	ApprovedAt string `json:"approvedAt,omitempty"`
}

// FingerprintView is state.fingerprints: recent calls of this node.
type FingerprintView struct {
	// Limit trips FINGERPRINT_TRIP after that many consecutive successful
	// calls with the same tool and canonical arguments (default 3).
	Limit int `json:"limit"`
	// StateDigest is the digest of the node's state now (outputs, scratch,
	// evidence ids), for the FAILURES_AND_EVIDENCE §3 rule.
	StateDigest string `json:"stateDigest"`
	// Recent calls, oldest first.
	Recent []FingerprintRecord `json:"recent"`
	// RepeatTools may legitimately repeat with the same arguments.
	RepeatTools []string `json:"repeatTools,omitempty"`
}

// FingerprintRecord is one finished call (also the fingerprint.record payload).
type FingerprintRecord struct {
	Tool         string  `json:"tool"`
	ArgsDigest   string  `json:"argsDigest"`
	ResultDigest string  `json:"resultDigest,omitempty"`
	StateDigest  string  `json:"stateDigest,omitempty"`
	Outcome      Outcome `json:"outcome"`
	CallID       string  `json:"callId,omitempty"`
}

// EvidenceView is state.evidence: this node's evidence first, then upstream
// nodes' (near to far, delegated pre-nodes included); newer first within a
// node.
type EvidenceView struct {
	Items []EvidenceItem `json:"items"`
}

// EvidenceItem is FAILURES_AND_EVIDENCE §4's record of one executed call,
// plus what the contract's extracts found (CONTRACT_SPEC §6.3). It is also
// the evidence.register payload.
type EvidenceItem struct {
	ID          string `json:"id"`
	SourceType  string `json:"sourceType"` // url | file | query | screenshot | test
	Locator     string `json:"locator"`
	RetrievedAt string `json:"retrievedAt"`
	ToolCallID  string `json:"toolCallId"`
	Excerpt     string `json:"excerpt,omitempty"`
	ContentHash string `json:"contentHash,omitempty"`

	Tool   string `json:"tool"`
	NodeID string `json:"nodeId,omitempty"`
	// Status is SUCCESS or FAILED: only executed calls have evidence.
	Status     Outcome `json:"status"`
	BusinessOK bool    `json:"businessOk"`
	// Result is success_with_data, success_empty or failure.
	Result string `json:"result"`
	Empty  bool   `json:"empty"`
	// Truncated is set when Payload was cut to the size budget; the full
	// payload is read with builtin_evidence_get paging.
	Truncated bool `json:"truncated,omitempty"`
	// Size is the full payload size in bytes.
	Size int `json:"size,omitempty"`
	// Extracts maps an extract key (or path) to the extracted subtree;
	// Counts to its item count.
	Extracts map[string]json.RawMessage `json:"extracts,omitempty"`
	Counts   map[string]int             `json:"counts,omitempty"`
	// Values are the extracted leaf values as strings, for equality checks.
	Values []string `json:"values,omitempty"`
	// Payload is the (possibly truncated) raw response.
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Evidence result kinds (FAILURES_AND_EVIDENCE §1, §6).
const (
	ResultWithData = "success_with_data"
	ResultEmpty    = "success_empty"
	ResultFailure  = "failure"
)

// ConversationView is state.conversation: recent user messages, oldest first.
type ConversationView struct {
	UserMessages []string `json:"userMessages"`
}

// FollowUpView is state.followup.
type FollowUpView struct {
	// Current is the open follow-up the user just answered, if any: its
	// expectedFields count as USER sources.
	Current *FollowUp `json:"current,omitempty"`
	// Answered are follow-ups answered in this turn.
	Answered []FollowUp `json:"answered,omitempty"`
}

// FollowUp is one question to the user and, once given, the answer.
type FollowUp struct {
	Question       string   `json:"question"`
	ExpectedFields []string `json:"expectedFields,omitempty"`
	Answer         string   `json:"answer,omitempty"`
}

// NodeView is state.node: the node the call runs in.
type NodeView struct {
	SessionID string `json:"sessionId"`
	TaskID    string `json:"taskId"`
	NodeID    string `json:"nodeId"`
	Status    string `json:"status"`
	SkillKey  string `json:"skillKey"`
	Depth     int    `json:"depth"`
	// Contract is the skill's whole skill_contract (normalised JSON).
	Contract  json.RawMessage `json:"contract,omitempty"`
	ToolNames []string        `json:"toolNames,omitempty"`

	Inputs   map[string]json.RawMessage `json:"inputs,omitempty"`
	Outputs  map[string]OutputValue     `json:"outputs,omitempty"`
	Shared   map[string]json.RawMessage `json:"shared,omitempty"`
	Session  map[string]json.RawMessage `json:"session,omitempty"`
	Platform map[string]json.RawMessage `json:"platform,omitempty"`
	Scratch  map[string]json.RawMessage `json:"scratch,omitempty"`

	Target        string `json:"target,omitempty"`
	TargetClaimed bool   `json:"targetClaimed,omitempty"`
	// DoneTools completed (SUCCESS, business ok) in this node or in its
	// delegated pre-nodes.
	DoneTools []string `json:"doneTools,omitempty"`
	// LastBusiness is the node's most recent business call.
	LastBusiness *CallSummary `json:"lastBusiness,omitempty"`
	// OutputsUsed is true when a downstream node depends on this node, or
	// the contract has a required, shared or entity output.
	OutputsUsed bool `json:"outputsUsed,omitempty"`

	// Skills are the agent's skill keys (to tell an unknown skill from one
	// that exists but may not be delegated).
	Skills []string `json:"skills,omitempty"`
	// Delegation (CONTRACT_SPEC §15).
	Delegatable      []string     `json:"delegatable,omitempty"`
	DelegateMaxDepth int          `json:"delegateMaxDepth,omitempty"`
	Delegations      []Delegation `json:"delegations,omitempty"`
	// ReservedKeys are scratch keys builtin_state_set may not write.
	ReservedKeys []string `json:"reservedKeys,omitempty"`
}

// OutputValue is one written output with its provenance.
type OutputValue struct {
	Value      json.RawMessage `json:"value"`
	SourceType string          `json:"sourceType"`
	SourceRef  string          `json:"sourceRef,omitempty"`
	SourcePath string          `json:"sourcePath,omitempty"`
}

// CallSummary is what the loop remembers of a business call.
type CallSummary struct {
	Tool       string  `json:"tool"`
	Outcome    Outcome `json:"outcome"`
	Empty      bool    `json:"empty,omitempty"`
	BusinessOK bool    `json:"businessOk,omitempty"`
}

// Delegation is a pre-node started by builtin_node_delegate.
type Delegation struct {
	SkillKey  string `json:"skillKey"`
	Objective string `json:"objective,omitempty"`
	Status    string `json:"status"` // PENDING, DONE, FAILED, CANCELLED, SKIPPED
}

// EntitiesView is state.entities: the session's entity index, newest first.
type EntitiesView struct {
	Entities []Entity `json:"entities"`
}

// Entity is one recognised business object (also the entity.record payload).
type Entity struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	// IDJSON is the id as the value had it when that was not a string (a
	// number or a boolean), so that prior.<type>.id binds it with its
	// type; ID is then its text.
	IDJSON json.RawMessage            `json:"idJson,omitempty"`
	Name   string                     `json:"name,omitempty"`
	Attrs  map[string]json.RawMessage `json:"attrs,omitempty"`
	TaskID string                     `json:"taskId,omitempty"`
}

// CatalogView is state.catalog: the tools visible to the node.
type CatalogView struct {
	Tools []string `json:"tools"`
}

// Effect payloads not covered by the types above.

// LedgerReserve pre-registers a write before it is called (ledger.reserve).
type LedgerReserve struct {
	Tool string `json:"tool"`
	Key  string `json:"key"`
	// LegacyKey is Key in the canonical form before RFC 8785's, when it
	// differs: the reservation is refused, as for Key, when an entry under
	// it is open or succeeded (entries reserved before the upgrade).
	LegacyKey  string `json:"legacyKey,omitempty"`
	ArgsDigest string `json:"argsDigest"`
	CallID     string `json:"callId,omitempty"`
	Approved   bool   `json:"approved,omitempty"`
	// StartedAt is set by the host when it commits the reservation (the
	// runner's clock); a plugin's value is overwritten. Empty: the store's
	// clock at the reservation.
	StartedAt string `json:"startedAt,omitempty"`
}

// LedgerSettle records a write's outcome (ledger.settle).
type LedgerSettle struct {
	Tool       string       `json:"tool"`
	Key        string       `json:"key"`
	State      LedgerState  `json:"state"`
	BusinessOK *bool        `json:"businessOk,omitempty"`
	Result     *Observation `json:"result,omitempty"`
}

// Suspension kinds of node.suspend.
const (
	SuspendFollowUp = "FOLLOW_UP"
	SuspendApproval = "APPROVAL"
	SuspendVerify   = "VERIFY"
)

// NodeSuspend suspends the node until the user answers (node.suspend).
type NodeSuspend struct {
	Kind           string   `json:"kind"`
	Question       string   `json:"question"`
	ExpectedFields []string `json:"expectedFields,omitempty"`
	Suggestions    []string `json:"suggestions,omitempty"`
	// Approval: the gated call, and its arguments as the question shows
	// them (Summary: label and value, sensitive values masked, platform
	// parameters left out; CONTRACT_SPEC §14.1), for clients that show
	// the question's lines apart from its text.
	Tool       string          `json:"tool,omitempty"`
	Args       json.RawMessage `json:"args,omitempty"`
	ArgsDigest string          `json:"argsDigest,omitempty"`
	Summary    []ArgLine       `json:"summary,omitempty"`
}

// ArgLine is one argument of an approval's summary.
type ArgLine struct {
	Label string `json:"label"`
	Value string `json:"value"`
}

// NodeFinish declares the node done (node.finish).
type NodeFinish struct {
	Output string `json:"output"`
}

// NodeFail declares the node failed (node.fail).
type NodeFail struct {
	Reason string `json:"reason"`
}

// NodeDelegate starts a delegated pre-node (node.delegate).
type NodeDelegate struct {
	SkillKey  string `json:"skillKey"`
	Objective string `json:"objective,omitempty"`
}

// OutputWrite writes one node output (output.write).
type OutputWrite struct {
	Key string `json:"key"`
	OutputValue
}

// StateSet writes a node scratch key (state.set).
type StateSet struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}
