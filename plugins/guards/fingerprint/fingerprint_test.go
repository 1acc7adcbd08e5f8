package fingerprint_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"testing"

	"github.com/agentwarden/warden/abi"
)

const (
	tool     = "search_site"
	args     = `{"q":"cms", "page":1}`
	response = `{"total":0, "records":[]}`
)

func sum(s string) string { x := sha256.Sum256([]byte(s)); return hex.EncodeToString(x[:]) }

var (
	argsDigest = sum(`{"page":1,"q":"cms"}`)
	respDigest = sum(`{"records":[],"total":0}`)
	same       = abi.FingerprintRecord{Tool: tool, ArgsDigest: argsDigest, ResultDigest: respDigest, StateDigest: "s1", Outcome: abi.OutcomeSuccess, CallID: "c0"}
)

func with(r abi.FingerprintRecord, f func(*abi.FingerprintRecord)) abi.FingerprintRecord {
	f(&r)
	return r
}

func times(n int, r abi.FingerprintRecord) []abi.FingerprintRecord {
	out := make([]abi.FingerprintRecord, n)
	for i := range out {
		out[i] = r
	}
	return out
}

type in struct {
	phase    abi.Phase
	view     abi.FingerprintView
	approved bool
	result   *abi.Observation
	response string
	locale   abi.Locale
}

func (r in) request() []byte {
	req := abi.Request{ABI: abi.Version, Kind: abi.RoleGuard, Phase: r.phase, Tool: tool, CallID: "c9",
		Args: json.RawMessage(args), Bound: json.RawMessage(args), Result: r.result, Locale: r.locale, State: map[string]json.RawMessage{}}
	if req.Phase == "" {
		req.Phase = abi.PhaseBefore
	}
	if r.response != "" {
		req.Response = json.RawMessage(r.response)
	}
	if r.view.Recent == nil {
		r.view.Recent = []abi.FingerprintRecord{}
	}
	req.State[string(abi.CapStateFingerprints)] = mustJSON(r.view)
	approval := abi.ApprovalView{}
	if r.approved {
		approval.Approved = &abi.ApprovedCall{Tool: tool, ArgsDigest: argsDigest}
	}
	req.State[string(abi.CapStateApproval)] = mustJSON(approval)
	return mustJSON(req)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func record(outcome abi.Outcome, state, result string) string {
	return abi.EffectFingerprintRecord + " " + string(mustJSON(abi.FingerprintRecord{
		Tool: tool, ArgsDigest: argsDigest, ResultDigest: result, StateDigest: state, Outcome: outcome, CallID: "c9"}))
}

// TestFingerprint has one row per rule of CONTRACT_SPEC §13 (steps 4 and 8,
// the FINGERPRINT_TRIP row of TOOL_OBSERVATION §5), FAILURES_AND_EVIDENCE
// §3 and the exemptions (repeat tools, §14.1 step 3). Every row runs
// natively and as wasm with identical verdicts and effects.
func TestFingerprint(t *testing.T) {
	t.Parallel()
	success := abi.Success("调用成功", json.RawMessage(response))
	failed := abi.Failed(abi.ToolTimeout, "工具 search_site 在 30s 内没有返回", abi.NextTimeout.Text(""))
	rejected := abi.Rejected(abi.ArgRejected, "参数不符合", abi.NextFixArgs.Text(""))
	trip := "REJECTED FINGERPRINT_TRIP: 相同参数已连续成功调用 search_site 3 次，已触发熔断，节点失败。下一步：调用 builtin_node_fail 说明原因"
	other := with(same, func(r *abi.FingerprintRecord) { r.ArgsDigest = sum("x") })
	cases := []struct {
		name    string
		in      in
		want    string
		effects []string
	}{
		// Before: the breaker.
		{"first call passes", in{}, "PASS", nil},
		{"two identical successes pass", in{view: abi.FingerprintView{Recent: times(2, same)}}, "PASS", nil},
		{"three identical successes trip", in{view: abi.FingerprintView{Recent: times(3, same)}}, trip, nil},
		{"older calls before the run do not matter", in{view: abi.FingerprintView{Recent: append([]abi.FingerprintRecord{other}, times(3, same)...)}}, trip, nil},
		{"trip en", in{view: abi.FingerprintView{Recent: times(3, same)}, locale: abi.LocaleEN},
			"REJECTED FINGERPRINT_TRIP: tool search_site already succeeded 3 times in a row with the same arguments; the breaker tripped and the node fails. Next: call builtin_node_fail and state the reason", nil},
		{"configured limit", in{view: abi.FingerprintView{Limit: 2, Recent: times(2, same)}},
			"REJECTED FINGERPRINT_TRIP: 相同参数已连续成功调用 search_site 2 次，已触发熔断，节点失败。下一步：调用 builtin_node_fail 说明原因", nil},
		{"a failure breaks the run", in{view: abi.FingerprintView{Recent: append(times(2, same), with(same, func(r *abi.FingerprintRecord) { r.Outcome = abi.OutcomeFailed }))}}, "PASS", nil},
		{"other arguments break the run", in{view: abi.FingerprintView{Recent: append(times(2, same), other)}}, "PASS", nil},
		{"another tool breaks the run", in{view: abi.FingerprintView{Recent: append(times(2, same), with(same, func(r *abi.FingerprintRecord) { r.Tool = "x" }))}}, "PASS", nil},
		{"repeat tools are exempt", in{view: abi.FingerprintView{Recent: times(3, same), RepeatTools: []string{"clock", tool}}}, "PASS", nil},
		{"the approved write is exempt", in{view: abi.FingerprintView{Recent: times(3, same)}, approved: true}, "PASS", nil},

		// After: record, and the no-new-information rule.
		{"success is recorded", in{phase: abi.PhaseAfter, view: abi.FingerprintView{StateDigest: "s1"}, result: &success, response: response},
			"PASS", []string{record(abi.OutcomeSuccess, "s1", respDigest)}},
		{"same arguments, result and state", in{phase: abi.PhaseAfter, view: abi.FingerprintView{StateDigest: "s1", Recent: []abi.FingerprintRecord{same}}, result: &success, response: response},
			"FAILED FINGERPRINT_REPEAT: 以相同参数再次调用 search_site 得到了相同结果，状态也没有变化。下一步：换一种做法：修改参数、改用其它工具，或根据已有结果调用 builtin_node_finish / builtin_node_fail",
			[]string{record(abi.OutcomeSuccess, "s1", respDigest)}},
		{"same call en", in{phase: abi.PhaseAfter, view: abi.FingerprintView{StateDigest: "s1", Recent: []abi.FingerprintRecord{same}}, result: &success, response: response, locale: abi.LocaleEN},
			"FAILED FINGERPRINT_REPEAT: calling search_site again with the same arguments returned the same result and nothing changed. Next: change strategy: other arguments, another tool, or finish or fail with what you have",
			[]string{record(abi.OutcomeSuccess, "s1", respDigest)}},
		{"state changed", in{phase: abi.PhaseAfter, view: abi.FingerprintView{StateDigest: "s2", Recent: []abi.FingerprintRecord{same}}, result: &success, response: response},
			"PASS", []string{record(abi.OutcomeSuccess, "s2", respDigest)}},
		{"result changed", in{phase: abi.PhaseAfter, view: abi.FingerprintView{StateDigest: "s1", Recent: []abi.FingerprintRecord{same}}, result: &success, response: `{"total":1}`},
			"PASS", []string{record(abi.OutcomeSuccess, "s1", sum(`{"total":1}`))}},
		{"only the previous record counts", in{phase: abi.PhaseAfter, view: abi.FingerprintView{StateDigest: "s1", Recent: []abi.FingerprintRecord{same, other}}, result: &success, response: response},
			"PASS", []string{record(abi.OutcomeSuccess, "s1", respDigest)}},
		{"failure is recorded and kept", in{phase: abi.PhaseAfter, view: abi.FingerprintView{StateDigest: "s1", Recent: []abi.FingerprintRecord{same}}, result: &failed},
			"PASS", []string{record(abi.OutcomeFailed, "s1", sum("null"))}},
		{"rejected calls are not recorded", in{phase: abi.PhaseAfter, result: &rejected}, "PASS", nil},
		{"repeat tools are recorded, not flagged", in{phase: abi.PhaseAfter, view: abi.FingerprintView{StateDigest: "s1", Recent: []abi.FingerprintRecord{same}, RepeatTools: []string{tool}}, result: &success, response: response},
			"PASS", []string{record(abi.OutcomeSuccess, "s1", respDigest)}},
		{"the approved write is recorded, not flagged", in{phase: abi.PhaseAfter, view: abi.FingerprintView{StateDigest: "s1", Recent: []abi.FingerprintRecord{same}}, approved: true, result: &success, response: response},
			"PASS", []string{record(abi.OutcomeSuccess, "s1", respDigest)}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := both(t, tt.in.request())
			if got := describe(v, tt.in.locale); got != tt.want {
				t.Errorf("verdict:\n got %s\nwant %s", got, tt.want)
			}
			if got := effects(v); !slices.Equal(got, tt.effects) {
				t.Errorf("effects:\n got %q\nwant %q", got, tt.effects)
			}
			if v.Observation != nil && v.Observation.Code == abi.FingerprintRepeat && string(v.Observation.Data) != `{"total":0,"records":[]}` {
				t.Errorf("data = %s", v.Observation.Data)
			}
		})
	}
}
