package store

import (
	"context"
	"encoding/json"
	"time"
)

// KeptSlotGenerations bounds a slot's history in the store: the newest
// generations, the desired one last. An older one cannot be rolled back to.
const KeptSlotGenerations = 16

// Origins of a slot generation.
const (
	SlotOriginAdmin    = "admin"    // the admin API (or the CLI, or the console)
	SlotOriginStart    = "start"    // the plugin directory an instance started with
	SlotOriginWatch    = "watch"    // a change found in a watched plugin directory
	SlotOriginRollback = "rollback" // a rollback to a kept generation
)

// SlotGeneration is one generation of a plugin slot as the instances
// sharing a store know it: the module (by digest) and configuration a
// slot should serve. The newest of a slot is its desired generation:
// every instance loads it, with its own checks, and serves it.
type SlotGeneration struct {
	Slot string `json:"slot"`
	// Number counts the slot's generations in the store from 1.
	Number uint64 `json:"number"`
	// Digest is the hex sha256 of the module (SlotModule returns it).
	Digest string `json:"digest"`
	// Config is the plugin's configuration; nil when none.
	Config json.RawMessage `json:"config,omitempty"`
	// Ref is the plugin's name@version as the installing instance read it.
	Ref string `json:"ref"`
	// Origin is one of the SlotOrigin constants.
	Origin string `json:"origin"`
	// File is the module's file in a plugin directory, if it came from one.
	File string `json:"file,omitempty"`
	// Instance is the instance that installed it.
	Instance string `json:"instance,omitempty"`
	// From is, for a rollback, the generation whose module and
	// configuration serve again.
	From uint64    `json:"from,omitempty"`
	Time time.Time `json:"time"`
}

// SlotStatus is what one instance last reported of a slot: the generation
// it serves, since when, and the last generation it refused, with why.
type SlotStatus struct {
	Slot     string `json:"slot"`
	Instance string `json:"instance"`
	// Serving is the store generation the instance serves; 0 when it
	// serves none of the store's (a module it loaded itself).
	Serving uint64    `json:"serving"`
	Digest  string    `json:"digest"`
	Since   time.Time `json:"since"`
	// Refused is the last generation the instance refused, 0 for none;
	// Reason says why.
	Refused uint64 `json:"refused,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Prepared is the last candidate the instance loaded, checked and
	// holds ready to serve, 0 for none.
	Prepared uint64    `json:"prepared,omitempty"`
	Updated  time.Time `json:"updated"`
}

// States of a slot candidate.
const (
	// CandidatePreparing: the live instances load and check it.
	CandidatePreparing = "preparing"
	// CandidateDesired: every live instance had it ready; it is the
	// slot's desired generation (or was, before a later one).
	CandidateDesired = "desired"
	// CandidateRefused: an instance refused it, or one did not answer
	// before its deadline; no instance serves it.
	CandidateRefused = "refused"
	// CandidateSuperseded: a later install replaced it while it was
	// being prepared; no instance serves it.
	CandidateSuperseded = "superseded"
)

// SlotCandidate is a generation proposed for a slot: every live instance
// prepares it (loads and checks it, and holds it ready) and reports, and
// it becomes the desired generation, under its own number, only once
// every live instance has it ready. One refusal refuses it for all.
type SlotCandidate struct {
	SlotGeneration
	// State is one of the Candidate constants.
	State string `json:"state"`
	// Deadline is when an instance that has not answered by then refuses
	// it (as the deciding instance finds it).
	Deadline time.Time `json:"deadline"`
	// By is the instance that refused it ("" when no instance answered in
	// time); Code the API's error code of the refusal and Reason why.
	By     string `json:"by,omitempty"`
	Code   string `json:"code,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Decided is when it left CandidatePreparing; zero until then.
	Decided time.Time `json:"decided,omitzero"`
}

// SlotDecision decides a candidate: CandidateDesired, with the plugin's
// Ref as the deciding instance read it, or CandidateRefused, with By,
// Code and Reason.
type SlotDecision struct {
	State            string
	Ref              string
	By, Code, Reason string
	Time             time.Time
}

// SlotControl is the control plane of plugin slots: the generations an
// install writes once and every instance sharing the store serves, and
// what each instance reports of them. Memory and sqlstore's DB implement
// it; storetest.RunSlotControl is their conformance suite.
type SlotControl interface {
	// PutSlotGeneration makes g the slot's desired generation, numbered
	// one past the newest, and stores module under g.Digest (module nil:
	// the store must hold it already, else ErrNotFound). Nothing changes,
	// and the desired generation is returned with false, when the desired
	// one has g's digest and configuration already, or when onlyFirst and
	// the slot has one. Only the newest KeptSlotGenerations are kept.
	PutSlotGeneration(ctx context.Context, g SlotGeneration, module []byte, onlyFirst bool) (SlotGeneration, bool, error)
	// DesiredSlots lists every slot's desired generation, by slot name.
	DesiredSlots(ctx context.Context) ([]SlotGeneration, error)
	// SlotGenerations lists a slot's kept generations, oldest first.
	SlotGenerations(ctx context.Context, slot string) ([]SlotGeneration, error)
	// SlotModule returns a kept generation's module by digest, ErrNotFound
	// when none is kept.
	SlotModule(ctx context.Context, digest string) ([]byte, error)
	// ReportSlot records what an instance serves of a slot, replacing its
	// previous report.
	ReportSlot(ctx context.Context, st SlotStatus) error
	// SlotStatuses lists the instances' reports of a slot, by instance.
	SlotStatuses(ctx context.Context, slot string) ([]SlotStatus, error)
	// ProposeSlotGeneration records c as the slot's candidate, numbered
	// one past every generation and candidate of the slot, and stores
	// module under its digest (nil: the store must hold it already, else
	// ErrNotFound). A candidate still being prepared is superseded by it.
	// Nothing new is recorded, and false is returned, when the candidate
	// being prepared has c's digest and configuration (it is returned),
	// or when the desired generation has them and none is being prepared
	// (it is returned, as a CandidateDesired).
	ProposeSlotGeneration(ctx context.Context, c SlotCandidate, module []byte) (SlotCandidate, bool, error)
	// PendingSlotCandidates lists the candidates being prepared, by slot.
	PendingSlotCandidates(ctx context.Context) ([]SlotCandidate, error)
	// SlotCandidates lists a slot's kept candidates, oldest first.
	SlotCandidates(ctx context.Context, slot string) ([]SlotCandidate, error)
	// DecideSlotCandidate moves a candidate being prepared to d.State:
	// CandidateDesired makes it the slot's desired generation (a
	// SlotGeneration of its number), CandidateRefused records who refused
	// it and why. It returns the candidate as it is afterwards, and
	// whether this call decided it (false: it was decided already, and
	// stays as it was). ErrNotFound when the store has no such candidate.
	DecideSlotCandidate(ctx context.Context, slot string, number uint64, d SlotDecision) (SlotCandidate, bool, error)
	// SlotChanges returns a channel that receives when a slot's desired
	// generation or candidate may have changed, until ctx ends; nil when the store
	// cannot tell (the caller polls).
	SlotChanges(ctx context.Context) <-chan struct{}
}

// SameConfig reports whether two configurations are the same JSON text,
// none and null being the same.
func SameConfig(a, b json.RawMessage) bool {
	norm := func(c json.RawMessage) string {
		s := string(c)
		if s == "null" {
			return ""
		}
		return s
	}
	return norm(a) == norm(b)
}
