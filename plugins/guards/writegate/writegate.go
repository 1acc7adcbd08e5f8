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
// Read tools pass in both phases without effects. The key, the digest and
// the payloads come from the ledger.* host services, so the guest only
// decides.
package writegate

import (
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

// Plugin is the WriteGate guard.
var Plugin = guest.Plugin{
	Manifest: abi.Manifest{
		Name: "writegate", Version: "1.0.0", ABI: abi.Version, Role: abi.RoleGuard,
		Description: "approval, idempotency and settlement of WRITE tool calls (CONTRACT_SPEC §14)",
		Phases:      []abi.Phase{abi.PhaseBefore, abi.PhaseAfter},
		Capabilities: []abi.Capability{
			abi.CapStateLedger, abi.CapStateApproval, abi.CapEffectLedger,
		},
	},
	Handle: handle,
}

const sep = "\x1f"

// facts is the answer of the ledger.lookup service.
type facts struct {
	key, digest               string
	state                     abi.LedgerState
	index                     string
	approved, confirm, listed bool
}

func lookup(c *guest.Call) facts {
	out, err := c.Service("ledger.lookup", nil)
	if err != nil {
		panic(err) // the host turns it into a trap: the guard fails closed
	}
	f := strings.Split(string(out), sep)
	if len(f) != 7 {
		panic("writegate: malformed ledger.lookup answer")
	}
	return facts{key: f[0], digest: f[1], state: abi.LedgerState(f[2]), index: f[3], approved: f[4] == "1", confirm: f[5] == "1", listed: f[6] == "1"}
}

func service(c *guest.Call, name, in string) []byte {
	out, err := c.Service(name, []byte(in))
	if err != nil {
		panic(err)
	}
	return out
}

func handle(c *guest.Call) {
	if c.Get(abi.FieldContract+".sideEffect").String() != "WRITE" {
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
		entry := guest.StatePath(abi.CapStateLedger, "entries."+f.index+".result")
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
	approved := "0"
	if f.approved {
		approved = "1"
	}
	c.Effect(abi.EffectLedgerReserve, service(c, "ledger.reserve", f.key+sep+f.digest+sep+approved))
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
	code := abi.Code(c.Get(abi.FieldResult + ".code").String())
	f := lookup(c)
	settle := func(state string) { c.Effect(abi.EffectLedgerSettle, service(c, "ledger.settle", f.key+sep+state)) }
	switch {
	case outcome == "SUCCESS":
		judged := service(c, "response.judge", "")
		if judged[0] == '1' {
			settle("SUCCESS" + sep + "1")
			c.Pass(nil)
			return
		}
		settle("FAILED" + sep + "0")
		if !f.approved {
			c.Pass(nil) // ResponseContract reports the business failure
			return
		}
		c.Failed(abi.ToolBusinessFailed, string(judged[1:]), abi.NextApprovedFailed.Text(c.Locale()), []byte(c.Get(abi.FieldResponse).Raw))
	case uncertain(code):
		settle("UNKNOWN")
		c.Pass(nil)
	default:
		state := "FAILED"
		if code == abi.ToolBusinessFailed {
			state += sep + "0"
		}
		settle(state)
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
