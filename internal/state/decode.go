package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentwarden/warden/abi"
)

// isNumberOrBool reports whether a JSON text is one number or boolean. A
// number is checked as a literal, never as a float64: 1e400 is an id too.
func isNumberOrBool(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return false
	}
	switch v.(type) {
	case json.Number, bool:
		return true
	}
	return false
}

// DecodeEffect decodes an effect's payload into its abi type and checks
// what the payload alone must satisfy (required fields, enum values). What
// depends on stored state (the ledger entry, reserved keys, the node's
// status) is each store's part of applying it; every Store decodes through
// this one function so that no backend accepts a payload another refuses.
//
// The result is one of *abi.LedgerReserve, *abi.LedgerSettle,
// *abi.FingerprintRecord, *abi.EvidenceItem, *abi.Entity, *abi.NodeSuspend,
// *abi.NodeFinish, *abi.NodeFail, *abi.NodeDelegate, *abi.OutputWrite or
// *abi.StateSet.
func DecodeEffect(e abi.Effect) (any, error) {
	switch e.Kind {
	case abi.EffectLedgerReserve:
		p := new(abi.LedgerReserve)
		return check(e, p, func() bool { return p.Tool == "" || p.Key == "" || p.ArgsDigest == "" }, "tool", "key", "argsDigest")
	case abi.EffectLedgerSettle:
		p := new(abi.LedgerSettle)
		if _, err := check(e, p, func() bool { return p.Tool == "" || p.Key == "" }, "tool", "key"); err != nil {
			return nil, err
		}
		switch p.State {
		case abi.LedgerSuccess, abi.LedgerFailed, abi.LedgerUnknown:
			return p, nil
		}
		return nil, fmt.Errorf("%w: settle state %q", ErrInvalidEffect, p.State)
	case abi.EffectFingerprintRecord:
		p := new(abi.FingerprintRecord)
		return check(e, p, func() bool { return p.Tool == "" || p.ArgsDigest == "" || !p.Outcome.Valid() }, "tool", "argsDigest", "outcome")
	case abi.EffectEvidenceRegister:
		p := new(abi.EvidenceItem)
		if _, err := check(e, p, func() bool { return p.ID == "" || p.Tool == "" }, "id", "tool"); err != nil {
			return nil, err
		}
		if p.Status != abi.OutcomeSuccess && p.Status != abi.OutcomeFailed {
			return nil, fmt.Errorf("%w: evidence status %v: only executed calls have evidence", ErrInvalidEffect, p.Status)
		}
		return p, nil
	case abi.EffectEntityRecord:
		p := new(abi.Entity)
		if _, err := check(e, p, func() bool { return p.Type == "" || p.ID == "" }, "type", "id"); err != nil {
			return nil, err
		}
		if len(p.IDJSON) > 0 {
			if !isNumberOrBool(p.IDJSON) {
				return nil, fmt.Errorf("%w: entity idJson %s: only a number or a boolean", ErrInvalidEffect, p.IDJSON)
			}
		}
		return p, nil
	case abi.EffectNodeSuspend:
		p := new(abi.NodeSuspend)
		if err := decode(e, p); err != nil {
			return nil, err
		}
		switch {
		case p.Kind != abi.SuspendFollowUp && p.Kind != abi.SuspendApproval && p.Kind != abi.SuspendVerify:
			return nil, fmt.Errorf("%w: suspension kind %q", ErrInvalidEffect, p.Kind)
		case strings.TrimSpace(p.Question) == "":
			return nil, missing("question")
		case p.Kind == abi.SuspendApproval && (p.Tool == "" || p.ArgsDigest == ""):
			return nil, missing("tool", "argsDigest")
		}
		return p, nil
	case abi.EffectNodeFinish:
		p := new(abi.NodeFinish)
		return check(e, p, func() bool { return strings.TrimSpace(p.Output) == "" }, "output")
	case abi.EffectNodeFail:
		p := new(abi.NodeFail)
		return check(e, p, func() bool { return strings.TrimSpace(p.Reason) == "" }, "reason")
	case abi.EffectNodeDelegate:
		p := new(abi.NodeDelegate)
		return check(e, p, func() bool { return p.SkillKey == "" }, "skillKey")
	case abi.EffectOutputWrite:
		p := new(abi.OutputWrite)
		return check(e, p, func() bool { return p.Key == "" || p.SourceType == "" || len(p.Value) == 0 || !json.Valid(p.Value) }, "key", "value", "sourceType")
	case abi.EffectStateSet:
		p := new(abi.StateSet)
		return check(e, p, func() bool { return p.Key == "" || len(p.Value) == 0 || !json.Valid(p.Value) }, "key", "value")
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownEffect, e.Kind)
}

// check decodes e into p and reports the required fields when bad() holds.
func check(e abi.Effect, p any, bad func() bool, fields ...string) (any, error) {
	if err := decode(e, p); err != nil {
		return nil, err
	}
	if bad() {
		return nil, missing(fields...)
	}
	return p, nil
}
