package abi

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Effect is a state change a plugin asks the host to apply. Plugins hold no
// state between calls; the host applies a call's effects atomically, and only
// when the call ended with an accepted result.
type Effect struct {
	Kind    string          `json:"kind"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Effect kinds and the capability a plugin needs to emit each.
const (
	EffectLedgerReserve     = "ledger.reserve"
	EffectLedgerSettle      = "ledger.settle"
	EffectFingerprintRecord = "fingerprint.record"
	EffectEvidenceRegister  = "evidence.register"
	EffectEntityRecord      = "entity.record"
	EffectNodeSuspend       = "node.suspend"
	EffectNodeFinish        = "node.finish"
	EffectNodeFail          = "node.fail"
	EffectNodeDelegate      = "node.delegate"
	EffectOutputWrite       = "output.write"
	EffectStateSet          = "state.set"
)

var effectCapability = map[string]Capability{
	EffectLedgerReserve:     CapEffectLedger,
	EffectLedgerSettle:      CapEffectLedger,
	EffectFingerprintRecord: CapEffectFingerprint,
	EffectEvidenceRegister:  CapEffectEvidence,
	EffectEntityRecord:      CapEffectEvidence,
	EffectNodeSuspend:       CapEffectNode,
	EffectNodeFinish:        CapEffectNode,
	EffectNodeFail:          CapEffectNode,
	EffectNodeDelegate:      CapEffectNode,
	EffectOutputWrite:       CapEffectOutput,
	EffectStateSet:          CapEffectState,
}

// EffectCapability returns the capability needed to emit an effect kind.
func EffectCapability(kind string) (Capability, error) {
	c, ok := effectCapability[kind]
	if !ok {
		return "", fmt.Errorf("abi: effect %q: %w", kind, ErrUnknownEffect)
	}
	return c, nil
}

// Capability is something a plugin asks for in its manifest: a host service
// (clock, random), a state view it may read, or a kind of effect it may
// emit. Nothing is granted by default.
type Capability string

// Capabilities.
const (
	// CapClock: real wall and monotonic clocks (WASI and warden.now).
	// Without it a plugin sees a deterministic fake clock.
	CapClock Capability = "clock"
	// CapRandom: real randomness (WASI and warden.random). Without it a
	// plugin gets a deterministic stream.
	CapRandom Capability = "random"

	CapStateLedger       Capability = "state.ledger"
	CapStateFingerprints Capability = "state.fingerprints"
	CapStateEvidence     Capability = "state.evidence"
	CapStateEntities     Capability = "state.entities"
	CapStateNode         Capability = "state.node"
	CapStateSession      Capability = "state.session"
	CapStateConversation Capability = "state.conversation"
	CapStateFollowUp     Capability = "state.followup"
	CapStateApproval     Capability = "state.approval"
	CapStateCatalog      Capability = "state.catalog"

	CapEffectLedger      Capability = "effect.ledger"
	CapEffectFingerprint Capability = "effect.fingerprint"
	CapEffectEvidence    Capability = "effect.evidence"
	CapEffectNode        Capability = "effect.node"
	CapEffectOutput      Capability = "effect.output"
	CapEffectState       Capability = "effect.state"
)

var capabilities = map[Capability]bool{
	CapClock: true, CapRandom: true,
	CapStateLedger: true, CapStateFingerprints: true, CapStateEvidence: true, CapStateEntities: true,
	CapStateNode: true, CapStateSession: true, CapStateConversation: true, CapStateFollowUp: true,
	CapStateApproval: true, CapStateCatalog: true,
	CapEffectLedger: true, CapEffectFingerprint: true, CapEffectEvidence: true, CapEffectNode: true,
	CapEffectOutput: true, CapEffectState: true,
}

// AllCapabilities returns every capability the host understands, sorted.
// Granting them all gives a plugin exactly what its manifest asks for: a
// tool that runs a module as its author wrote it (warden plugin test
// without an allow-list) does that; whoever installs a plugin grants a
// list of its own.
func AllCapabilities() []Capability {
	out := make([]Capability, 0, len(capabilities))
	for c := range capabilities {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// Known reports whether c is a capability the host understands.
func (c Capability) Known() bool { return capabilities[c] }

// IsStateView reports whether c names a state view.
func (c Capability) IsStateView() bool { return strings.HasPrefix(string(c), "state.") }
