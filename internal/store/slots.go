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
	Refused uint64    `json:"refused,omitempty"`
	Reason  string    `json:"reason,omitempty"`
	Updated time.Time `json:"updated"`
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
	// SlotChanges returns a channel that receives when a slot's desired
	// generation may have changed, until ctx ends; nil when the store
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
