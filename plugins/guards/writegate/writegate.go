// Package writegate is the WriteGate guard (CONTRACT_SPEC §13 step 5, §14):
// it stands before and after every call of a WRITE tool, so that a write
// runs only once per business action and only with the user's consent.
//
// Before the call it looks the write up in the task's ledger by tool and
// idempotency key (§14.2):
//
//   - SUCCESS, business ok: the tool is not called again; the earlier
//     observation is returned as SUCCESS, saying it was reused
//     (TOOL_OBSERVATION §5 "复用已有成功写证据").
//   - STARTED: DEFERRED WRITE_IN_FLIGHT.
//   - UNKNOWN, UNKNOWN_PRE_CALL: DEFERRED WRITE_PENDING_VERIFY.
//   - FAILED (business failure included) or no entry: the call may go on.
//
// A call that may go on needs approval unless the user already confirmed
// these exact arguments (state.approval.approved, same tool and argument
// digest) or the tool bypasses approval, which takes both confirm: false
// and a listing in state.write-confirm-bypass-tools (§14.1). Without it the
// call is DEFERRED APPROVAL_REQUIRED, with no effect: the runner holds the
// gated call for builtin_node_approval. Otherwise the guard passes with a
// ledger.reserve effect, the pre-registration of §13.
//
// After the call it settles the entry with ledger.settle: SUCCESS or FAILED
// by the business judgement (the guard judges the response itself when the
// invoker's result is still SUCCESS, so the order of the after-phase guards
// does not matter), or UNKNOWN when the invoker reports a timeout, an I/O,
// RPC or unknown error (§14.4, write column). An approved write that failed
// keeps its observation with the next step replaced by NEXT_APPROVED_FAILED
// (TOOL_OBSERVATION §7.3): the approval covered that one call, and what to
// do now is the user's decision.
//
// Read tools pass in both phases without effects. Every rule runs in the
// guest: the idempotency key, the ledger lookup, the approval check and the
// effect payloads; only the argument digest is the host's digest primitive.
// New builds a generation with other rules (Options), e.g. one that also
// gates a read tool.
package writegate

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/plugins/guards/internal/envelope"
	"github.com/tidwall/gjson"
)

// Plugin is the first-party WriteGate guard.
var Plugin = New(Options{})

// Options change the rules of a WriteGate generation.
type Options struct {
	// Version is the manifest version; "" is the first-party "1.0.0".
	Version string
	// GateReads names tools the gate treats as writes whatever their
	// sideEffect: their calls need approval and are kept in the ledger.
	GateReads []string
}

// New returns a WriteGate guard with the given options.
func New(o Options) guest.Plugin {
	g := &gate{reads: slices.Clone(o.GateReads)}
	version := o.Version
	if version == "" {
		version = "1.0.0"
	}
	return guest.Plugin{Manifest: manifest(version), Handle: g.handle}
}

type gate struct{ reads []string }

func manifest(version string) abi.Manifest {
	return abi.Manifest{
		Name: "writegate", Version: version, ABI: abi.Version, Role: abi.RoleGuard,
		Description: "approval, idempotency and settlement of WRITE tool calls (CONTRACT_SPEC §14)",
		Phases:      []abi.Phase{abi.PhaseBefore, abi.PhaseAfter},
		Capabilities: []abi.Capability{
			abi.CapStateLedger, abi.CapStateApproval, abi.CapEffectLedger,
		},
	}
}

func (g *gate) handle(c *guest.Call) {
	if c.Get(abi.FieldContract+".sideEffect").String() != "WRITE" && (len(g.reads) == 0 || !slices.Contains(g.reads, c.Tool())) {
		c.Pass(nil)
		return
	}
	if c.Phase() == abi.PhaseAfter {
		after(c)
		return
	}
	before(c)
}

func before(c *guest.Call) {
	l := c.Locale()
	tool := c.Tool()
	f := lookup(c)
	switch f.state {
	case abi.LedgerSuccess:
		entry := guest.StatePath(abi.CapStateLedger, "entries."+strconv.Itoa(f.index)+".result")
		c.Success(reused(l, tool, c.Get(entry+".text").String()), []byte(c.Get(entry+".data").Raw))
		return
	case abi.LedgerStarted:
		c.Deferred(abi.WriteInFlight, abi.WriteInFlight.Reason(l, "tool", tool), abi.NextWaitInFlight.Text(l))
		return
	case abi.LedgerUnknown, abi.LedgerUnknownPreCall:
		c.Deferred(abi.WritePendingVerify, abi.WritePendingVerify.Reason(l, "tool", tool), abi.NextWaitVerify.Text(l))
		return
	}
	bypass := !f.confirm && f.listed
	if !bypass && !f.approved {
		c.Deferred(abi.ApprovalRequired, abi.ApprovalRequired.Reason(l), abi.NextApproval.Text(l, "tool", tool))
		return
	}
	c.Effect(abi.EffectLedgerReserve, reserve(c, f))
	c.Pass(nil)
}

// reused is the summary of a write answered from the ledger.
func reused(l abi.Locale, tool, earlier string) string {
	if l == abi.LocaleEN {
		s := "write " + tool + " already succeeded for this business action; it was not called again and its earlier result is reused"
		if earlier != "" {
			s += ": " + earlier
		}
		return s
	}
	s := "写操作 " + tool + " 此前已对同一业务动作执行成功，本次未再调用，复用上次结果"
	if earlier != "" {
		s += "：" + earlier
	}
	return s
}

func after(c *guest.Call) {
	outcome := c.Get(abi.FieldResult + ".outcome").String()
	var code abi.Code
	if outcome != "SUCCESS" { // a success has no code: not looked for past its data
		code = abi.Code(c.Get(abi.FieldResult + ".code").String())
	}
	f := lookup(c)
	yes, no := true, false
	settle := func(state abi.LedgerState, businessOK *bool) {
		c.Effect(abi.EffectLedgerSettle, settlement(c, f.key, state, businessOK))
	}
	switch {
	case outcome == "SUCCESS":
		ok, reason, err := envelope.Judge(c)
		if err != nil {
			panic(err) // the host turns it into a trap: the guard fails closed
		}
		if ok {
			settle(abi.LedgerSuccess, &yes)
			c.Pass(nil)
			return
		}
		settle(abi.LedgerFailed, &no)
		if !f.approved {
			c.Pass(nil) // ResponseContract reports the business failure
			return
		}
		c.Failed(abi.ToolBusinessFailed, reason, abi.NextApprovedFailed.Text(c.Locale()), []byte(c.Get(abi.FieldResponse).Raw))
	case uncertain(code):
		settle(abi.LedgerUnknown, nil)
		c.Pass(nil)
	default:
		var businessOK *bool
		if code == abi.ToolBusinessFailed {
			businessOK = &no
		}
		settle(abi.LedgerFailed, businessOK)
		if outcome != "FAILED" || !f.approved {
			c.Pass(nil)
			return
		}
		r := abi.FieldResult
		c.Failed(code, c.Get(r+".text").String(), abi.NextApprovedFailed.Text(c.Locale()), []byte(c.Get(r+".data").Raw))
	}
}

// uncertain reports whether a failed write may still have taken effect
// (CONTRACT_SPEC §14.4: timeout, I/O, MCP RPC and unknown errors).
func uncertain(code abi.Code) bool {
	switch code {
	case abi.ToolTimeout, abi.ToolIOError, abi.MCPRPCError, abi.ToolError:
		return true
	}
	return false
}

// facts is what the gate finds about the call in the request (§14.2).
type facts struct {
	key, digest string
	// legacyKey is the key's pre-RFC 8785 form (contract.Tool.LegacyKeyFor)
	// when it differs from key, else "".
	legacyKey string
	// state is the write's ledger state, "" when it has no entry. A SUCCESS
	// whose business judgement failed reads as FAILED (§14.2 "业务失败").
	state    abi.LedgerState
	index    int  // the entry's index in state.ledger.entries, -1 when none
	approved bool // the user confirmed this tool with these exact arguments
	confirm  bool // the tool's effective confirm (default true for WRITE)
	listed   bool // the tool is in the ledger view's bypassTools
}

var (
	entriesPath  = envelope.StatePath(abi.CapStateLedger, "entries")
	bypassPath   = envelope.StatePath(abi.CapStateLedger, "bypassTools")
	approvedPath = envelope.StatePath(abi.CapStateApproval, "approved")
)

// lookup reads the facts of §14.2 for the call, its arguments' digest from
// the host's digest primitive. A contract that does not parse panics: the
// host turns it into a trap and the guard fails closed.
func lookup(c *guest.Call) facts {
	f, err := ledgerFacts(c, c.DigestHex(envelope.ArgsPath(c)))
	if err != nil {
		panic(err)
	}
	return f
}

// ledgerFacts reads the facts of §14.2 from a request whose bound arguments
// have the given digest.
func ledgerFacts(req envelope.Reader, digest string) (facts, error) {
	t, err := envelope.Tool(req)
	if err != nil {
		return facts{}, err
	}
	f := facts{index: -1, digest: digest, confirm: t.NeedsConfirm()}
	args := []byte(envelope.Args(req).Raw)
	f.key = t.KeyFor(args)
	if legacy := t.LegacyKeyFor(args); legacy != f.key {
		f.legacyKey = legacy
	}
	tool := envelope.Get(req, abi.FieldTool).String()
	i, byKey := 0, false
	envelope.Get(req, entriesPath).ForEach(func(_, e gjson.Result) bool {
		// An entry under the key's pre-RFC 8785 form counts as the same
		// write, unless one under the current form exists.
		k := e.Get("key").Str
		if e.Get("tool").Str == tool && (k == f.key || (k == f.legacyKey && f.legacyKey != "" && !byKey)) {
			byKey = k == f.key
			f.index = i
			f.state = abi.LedgerState(e.Get("state").Str)
			if ok := e.Get("businessOk"); f.state == abi.LedgerSuccess && ok.Exists() && !ok.Bool() {
				f.state = abi.LedgerFailed
			}
		}
		i++
		return true
	})
	a := envelope.Get(req, approvedPath)
	f.approved = a.Exists() && a.Get("tool").Str == tool && a.Get("argsDigest").Str == f.digest
	envelope.Get(req, bypassPath).ForEach(func(_, v gjson.Result) bool {
		f.listed = v.Str == tool
		return !f.listed
	})
	return f, nil
}

// reserve is the ledger.reserve payload (abi.LedgerReserve) that
// pre-registers the call.
func reserve(req envelope.Reader, f facts) []byte {
	b, err := json.Marshal(abi.LedgerReserve{
		Tool: envelope.Get(req, abi.FieldTool).String(), Key: f.key, LegacyKey: f.legacyKey, ArgsDigest: f.digest,
		CallID: envelope.Get(req, abi.FieldCallID).String(), Approved: f.approved,
	})
	if err != nil {
		panic(err)
	}
	return b
}

// settlement is the ledger.settle payload (abi.LedgerSettle) with the
// request's result as the recorded observation, which a later identical
// write reuses on SUCCESS.
func settlement(req envelope.Reader, key string, state abi.LedgerState, businessOK *bool) []byte {
	s := abi.LedgerSettle{Tool: envelope.Get(req, abi.FieldTool).String(), Key: key, State: state, BusinessOK: businessOK}
	if r := envelope.Get(req, abi.FieldResult); r.IsObject() {
		var o abi.Observation
		if err := json.Unmarshal([]byte(r.Raw), &o); err == nil {
			s.Result = &o
		}
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return b
}
