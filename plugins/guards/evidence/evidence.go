// Package evidence is the Evidence guard (CONTRACT_SPEC §13 step 7, §6.3;
// FAILURES_AND_EVIDENCE §1, §4, §6): after a call that executed it
// registers one EvidenceItem, the record the final answer cites and the
// EVIDENCE provenance checks compare against.
//
// Only executed calls have evidence: a SUCCESS or FAILED result
// (TOOL_OBSERVATION §5 note); a REJECTED or DEFERRED call never ran and
// passes without effects. The guest builds the item:
//
//   - id "ev_" + 16 hex digits of the SHA-256 of the call id, so that a
//     replayed call registers the same id;
//   - sourceType "query" for every business tool, unless the plugin's
//     config maps the tool to another type (config.sourceTypes, e.g. a web
//     fetch tool to "url"): a business tool's answer is the result of a
//     query to a system of record, and for a write it is that system's
//     record of the write;
//   - locator: the tool and its canonical bound arguments;
//   - retrievedAt from the host clock (the clock capability);
//   - toolCallId, an excerpt, contentHash (hex SHA-256 of the response);
//   - status SUCCESS for a call that returned, including a business or
//     output-schema failure (businessOk false, §6.1), FAILED for a call that
//     failed in the call layer;
//   - result success_with_data, success_empty (every extract counts 0, or
//     without extracts an empty response) or failure — a failure never has
//     extracts, so it cannot read as an empty list;
//   - extracts, counts and the flattened leaf values of a business-ok call;
//   - payload: the response, or, over the size budget (config
//     maxPayloadBytes, default 16 KiB), its head as a JSON string with
//     truncated true and size the full size.
//
// Each entity of the extracts (a WRITE tool's arguments merged under its
// response) becomes an entity.record effect. The guard then passes; when
// the response was over the budget it instead returns the call's
// observation with the same outcome and code, its data cut to the budget,
// and a note saying so and how to read the rest with builtin_evidence_get,
// so the model never mistakes a head for the whole.
package evidence

import (
	"sync"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

// Plugin is the Evidence guard.
var Plugin = guest.Plugin{
	Manifest: abi.Manifest{
		Name: "evidence", Version: "1.0.0", ABI: abi.Version, Role: abi.RoleGuard,
		Description:  "registers evidence and entities of executed calls; truncates oversized results",
		Phases:       []abi.Phase{abi.PhaseAfter},
		Capabilities: []abi.Capability{abi.CapClock, abi.CapEffectEvidence},
		ConfigSchema: []byte(`{"type":"object","additionalProperties":false,"properties":{` +
			`"maxPayloadBytes":{"type":"integer","minimum":64,"maximum":16777216},` +
			`"sourceTypes":{"type":"object","additionalProperties":{"enum":["url","file","query","screenshot","test"]}}}}`),
	},
	Handle: handle,
}

func handle(c *guest.Call) {
	outcome := c.Get(abi.FieldResult + ".outcome").String()
	if outcome != "SUCCESS" && outcome != "FAILED" {
		c.Pass(nil)
		return
	}
	e, err := read(c, outcome)
	if err != nil {
		panic(err) // the host turns it into a trap: the guard fails closed
	}
	// The item and the entity records are named as parts the host
	// assembles (the splice primitive): the guest writes what it decides,
	// the host copies in the response and its extracts.
	p := partsPool.Get().(*guest.Parts)
	defer partsPool.Put(p)
	p.Reset()
	e.spliceItem(p, c.Now().Format(time.RFC3339Nano))
	c.Splice(abi.EffectEvidenceRegister, p)
	p.Reset()
	if e.spliceEntities(p) > 0 {
		c.Splice(abi.EffectEntityRecord, p)
	}
	if e.size <= e.budget {
		c.Pass(nil)
		return
	}
	text, data, err := e.truncated()
	if err != nil {
		panic(err)
	}
	if outcome == "SUCCESS" {
		c.Success(text, data)
		return
	}
	r := abi.FieldResult
	c.Failed(abi.Code(c.Get(r+".code").String()), text, c.Get(r+".next").String(), data)
}

// partsPool keeps the parts' buffers between calls.
var partsPool = sync.Pool{New: func() any { return new(guest.Parts) }}
