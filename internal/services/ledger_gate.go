package services

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/tidwall/gjson"
)

// The ledger services give the WriteGate guard the facts of CONTRACT_SPEC
// §14 it decides on (idempotency key, ledger state, approval, bypass) and
// build its effect payloads, natively.

func init() {
	Register("ledger.lookup", ledgerLookup)
	Register("ledger.reserve", ledgerReserve)
	Register("ledger.settle", ledgerSettle)
}

// ledgerSep separates the fields of a compact service answer, which a guest
// splits without a JSON parser.
const ledgerSep = "\x1f"

var (
	ledgerEntriesPath = "state." + escapeKey(string(abi.CapStateLedger)) + ".entries"
	ledgerBypassPath  = "state." + escapeKey(string(abi.CapStateLedger)) + ".bypassTools"
	approvedPath      = "state." + escapeKey(string(abi.CapStateApproval)) + ".approved"
)

func escapeKey(s string) string { return strings.ReplaceAll(s, ".", `\.`) }

// ledgerFacts is what ledger.lookup finds for the call in the request.
type ledgerFacts struct {
	key, digest string
	// state is the write's ledger state, "" when it has no entry. A SUCCESS
	// whose business judgement failed reads as FAILED (§14.2 "业务失败").
	state    abi.LedgerState
	index    int // the entry's index in state.ledger.entries, -1 when none
	approved bool
	confirm  bool
	listed   bool
}

func lookupLedger(req []byte) (ledgerFacts, error) {
	t, err := requestToolContract(req)
	if err != nil {
		return ledgerFacts{}, err
	}
	f := ledgerFacts{index: -1, digest: argsDigest(req), confirm: t.NeedsConfirm()}
	f.key = t.KeyFor([]byte(boundArgs(req).Raw))
	tool := gjson.GetBytes(req, abi.FieldTool).String()
	i := 0
	gjson.GetBytes(req, ledgerEntriesPath).ForEach(func(_, e gjson.Result) bool {
		if e.Get("tool").Str == tool && e.Get("key").Str == f.key {
			f.index = i
			f.state = abi.LedgerState(e.Get("state").Str)
			if ok := e.Get("businessOk"); f.state == abi.LedgerSuccess && ok.Exists() && !ok.Bool() {
				f.state = abi.LedgerFailed
			}
		}
		i++
		return true
	})
	a := gjson.GetBytes(req, approvedPath)
	f.approved = a.Exists() && a.Get("tool").Str == tool && a.Get("argsDigest").Str == f.digest
	gjson.GetBytes(req, ledgerBypassPath).ForEach(func(_, v gjson.Result) bool {
		f.listed = v.Str == tool
		return !f.listed
	})
	return f, nil
}

// ledgerLookup: in is ignored. The answer is the fields key, argsDigest,
// state, entry index, approved, confirm and listed, joined by ledgerSep; booleans
// are "1" or "0", a missing entry has state "" and index -1. confirm is the
// tool's effective confirm (default true for WRITE); listed says whether the
// tool is in the ledger view's bypassTools.
func ledgerLookup(req, _ []byte) ([]byte, error) {
	f, err := lookupLedger(req)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, 160)
	out = append(out, f.key...)
	out = append(out, ledgerSep...)
	out = append(out, f.digest...)
	out = append(out, ledgerSep...)
	out = append(out, f.state...)
	out = append(out, ledgerSep...)
	out = strconv.AppendInt(out, int64(f.index), 10)
	for _, b := range []bool{f.approved, f.confirm, f.listed} {
		out = append(out, ledgerSep...)
		out = append(out, b01(b))
	}
	return out, nil
}

// ledgerReserve: in is the key, the argument digest and "1" or "0" for
// approved, joined by ledgerSep, as ledger.lookup gave them. The answer is
// the ledger.reserve payload (abi.LedgerReserve) that pre-registers the
// call in the request.
func ledgerReserve(req, in []byte) ([]byte, error) {
	f := strings.Split(string(in), ledgerSep)
	if len(f) != 3 {
		return nil, fmt.Errorf("services: ledger.reserve: want key, digest and approved, got %q", in)
	}
	return json.Marshal(abi.LedgerReserve{
		Tool: gjson.GetBytes(req, abi.FieldTool).String(), Key: f[0], ArgsDigest: f[1],
		CallID: gjson.GetBytes(req, abi.FieldCallID).String(), Approved: f[2] == "1",
	})
}

// ledgerSettle: in is the key (from ledger.lookup) and the settled state,
// optionally followed by "1" or "0" for the business judgement, joined by
// ledgerSep. The answer is the ledger.settle payload (abi.LedgerSettle) with
// the request's result as the recorded observation, which a later identical
// write reuses on SUCCESS.
func ledgerSettle(req, in []byte) ([]byte, error) {
	f := strings.Split(string(in), ledgerSep)
	if len(f) < 2 || len(f) > 3 {
		return nil, fmt.Errorf("services: ledger.settle: want key, state and business judgement, got %q", in)
	}
	s := abi.LedgerSettle{Tool: gjson.GetBytes(req, abi.FieldTool).String(), Key: f[0], State: abi.LedgerState(f[1])}
	if len(f) == 3 {
		b := f[2] == "1"
		s.BusinessOK = &b
	}
	if r := gjson.GetBytes(req, abi.FieldResult); r.IsObject() {
		var o abi.Observation
		if err := json.Unmarshal([]byte(r.Raw), &o); err == nil {
			s.Result = &o
		}
	}
	return json.Marshal(s)
}

func b01(b bool) byte {
	if b {
		return '1'
	}
	return '0'
}
