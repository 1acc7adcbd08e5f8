package writegate_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
)

const (
	tool      = "create_article"
	bound     = `{"title":"Q3","spaceId":7,"body":"text"}`
	canonical = `{"body":"text","spaceId":7,"title":"Q3"}`
	write     = `{"sideEffect":"WRITE","idempotencyKey":["spaceId","title"],"success":{"path":"code","op":"EQ","value":200},"error":{"code":"errCode","message":"msg"}}`
	noConfirm = `{"sideEffect":"WRITE","confirm":false,"idempotencyKey":["spaceId","title"],"success":{"path":"code","op":"EQ","value":200}}`
	read      = `{"sideEffect":"NONE"}`

	nextApproval = "调用 builtin_node_approval 申请用户确认，toolName 填 create_article"
	nextFailed   = "用 builtin_node_follow_up 向用户说明失败原因并询问如何处理；用户不再继续时 builtin_node_fail；不要自行改用其它写操作补救"
)

var (
	key    = contract.IdempotencyKey(tool, []string{"spaceId", "title"}, []byte(bound))
	digest = func() string { s := sha256.Sum256([]byte(canonical)); return hex.EncodeToString(s[:]) }()
	yes    = true
	no     = false
)

// in is one request of a table row.
type in struct {
	phase    abi.Phase
	contract string
	bound    string
	ledger   *abi.LedgerView
	approval *abi.ApprovalView
	result   *abi.Observation
	response string
	locale   abi.Locale
}

func (r in) request() []byte {
	req := abi.Request{ABI: abi.Version, Kind: abi.RoleGuard, Phase: r.phase, Tool: tool, CallID: "call-9",
		Args: json.RawMessage(bound), Contract: json.RawMessage(r.contract), Result: r.result, Locale: r.locale,
		State: map[string]json.RawMessage{}}
	if r.phase == "" {
		req.Phase = abi.PhaseBefore
	}
	req.Bound = json.RawMessage(bound)
	if r.bound != "" {
		req.Args, req.Bound = json.RawMessage(r.bound), json.RawMessage(r.bound)
	}
	if r.response != "" {
		req.Response = json.RawMessage(r.response)
	}
	ledger := r.ledger
	if ledger == nil {
		ledger = &abi.LedgerView{Entries: []abi.LedgerEntry{}}
	}
	req.State[string(abi.CapStateLedger)] = mustJSON(ledger)
	approval := r.approval
	if approval == nil {
		approval = &abi.ApprovalView{}
	}
	req.State[string(abi.CapStateApproval)] = mustJSON(approval)
	b, err := json.Marshal(req)
	if err != nil {
		panic(err)
	}
	return b
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func entry(state abi.LedgerState, ok *bool, result *abi.Observation) *abi.LedgerView {
	return &abi.LedgerView{Entries: []abi.LedgerEntry{
		{Tool: "other_write", Key: key, State: abi.LedgerStarted},
		{Tool: tool, Key: key, State: state, ArgsDigest: digest, BusinessOK: ok, Result: result},
	}}
}

func approvedFor(d string) *abi.ApprovalView {
	return &abi.ApprovalView{Approved: &abi.ApprovedCall{Tool: tool, ArgsDigest: d, ApprovedAt: "2026-03-01T08:00:00Z"}}
}

func reserve(approved bool) string {
	return abi.EffectLedgerReserve + " " + string(mustJSON(abi.LedgerReserve{Tool: tool, Key: key, ArgsDigest: digest, CallID: "call-9", Approved: approved}))
}

func settle(state abi.LedgerState, ok *bool, result abi.Observation) string {
	return abi.EffectLedgerSettle + " " + string(mustJSON(abi.LedgerSettle{Tool: tool, Key: key, State: state, BusinessOK: ok, Result: &result}))
}

func ptr[T any](v T) *T { return &v }

var (
	earlier   = abi.Success("文章已创建", json.RawMessage(`{"code":200,"id":"a-1"}`))
	invoked   = abi.Success("create_article 调用成功", json.RawMessage(`{"code":200,"id":"a-2"}`))
	bizFailed = abi.Success("create_article 调用成功", json.RawMessage(`{"code":409,"errCode":"cms.409","msg":"标题重复"}`))
)

func failedWith(code abi.Code) abi.Observation {
	return abi.Failed(code, code.Reason("", "tool", tool, "detail", "boom", "timeout", "30s"), abi.NextRetryLater.Text(""))
}

// TestWriteGate has one row per case of CONTRACT_SPEC §14.1, §14.2 and
// §14.4 (write column) and of TOOL_OBSERVATION §5 that concerns WriteGate.
// Every row runs natively and as wasm with identical verdicts and effects.
func TestWriteGate(t *testing.T) {
	t.Parallel()
	timeout := failedWith(abi.ToolTimeout)
	io := failedWith(abi.ToolIOError)
	rpc := failedWith(abi.MCPRPCError)
	unknown := failedWith(abi.ToolError)
	unreachable := failedWith(abi.ToolUnreachable)
	toolErr := failedWith(abi.MCPToolError)
	badParams := failedWith(abi.MCPInvalidParams)
	business := abi.Failed(abi.ToolBusinessFailed, "业务失败 [cms.409]：标题重复", abi.NextBusiness.Text(""), json.RawMessage(`{"code":409}`))
	cases := []struct {
		name    string
		in      in
		want    string
		effects []string
	}{
		// Read tools are none of the gate's business.
		{"read tool passes", in{contract: read}, "PASS", nil},
		{"no contract passes", in{}, "PASS", nil},
		{"read tool after passes", in{phase: abi.PhaseAfter, contract: read, result: &invoked, response: `{"code":200}`}, "PASS", nil},

		// §14.1 approval.
		{"write without approval is deferred", in{contract: write},
			"DEFERRED APPROVAL_REQUIRED: 该写操作须经用户确认。下一步：" + nextApproval, nil},
		{"write without approval en", in{contract: write, locale: abi.LocaleEN},
			"DEFERRED APPROVAL_REQUIRED: this write must be confirmed by the user. Next: ask the user to confirm with builtin_node_approval, toolName create_article", nil},
		{"approved write reserves", in{contract: write, approval: approvedFor(digest)}, "PASS", []string{reserve(true)}},
		{"approval of other arguments does not count", in{contract: write, approval: approvedFor("0000")},
			"DEFERRED APPROVAL_REQUIRED: 该写操作须经用户确认。下一步：" + nextApproval, nil},
		{"confirm false and listed bypasses", in{contract: noConfirm, ledger: &abi.LedgerView{BypassTools: []string{"x", tool}}}, "PASS", []string{reserve(false)}},
		{"confirm false but not listed still needs approval", in{contract: noConfirm, ledger: &abi.LedgerView{BypassTools: []string{"x"}}},
			"DEFERRED APPROVAL_REQUIRED: 该写操作须经用户确认。下一步：" + nextApproval, nil},
		{"listed but confirm default needs approval", in{contract: write, ledger: &abi.LedgerView{BypassTools: []string{tool}}},
			"DEFERRED APPROVAL_REQUIRED: 该写操作须经用户确认。下一步：" + nextApproval, nil},

		// §14.2 ledger states.
		{"success is reused without calling", in{contract: write, ledger: entry(abi.LedgerSuccess, &yes, &earlier)},
			"SUCCESS: 写操作 create_article 此前已对同一业务动作执行成功，本次未再调用，复用上次结果：文章已创建", nil},
		{"success is reused en", in{contract: write, ledger: entry(abi.LedgerSuccess, &yes, &earlier), locale: abi.LocaleEN},
			"SUCCESS: write create_article already succeeded for this business action; it was not called again and its earlier result is reused: 文章已创建", nil},
		{"same key with other non-key arguments is reused", in{contract: write, bound: `{"spaceId":7,"title":"Q3","body":"other"}`, ledger: entry(abi.LedgerSuccess, &yes, &earlier)},
			"SUCCESS: 写操作 create_article 此前已对同一业务动作执行成功，本次未再调用，复用上次结果：文章已创建", nil},
		{"started is in flight", in{contract: write, ledger: entry(abi.LedgerStarted, nil, nil), approval: approvedFor(digest)},
			"DEFERRED WRITE_IN_FLIGHT: 写操作 create_article 正在进行中。下一步：等待该写操作结束，不要再次调用", nil},
		{"unknown waits for verify", in{contract: write, ledger: entry(abi.LedgerUnknown, nil, nil)},
			"DEFERRED WRITE_PENDING_VERIFY: 写操作 create_article 的结果尚待核实。下一步：等待写结果核实完成，不要再次调用该写工具", nil},
		{"unknown pre-call waits for verify", in{contract: write, ledger: entry(abi.LedgerUnknownPreCall, nil, nil)},
			"DEFERRED WRITE_PENDING_VERIFY: 写操作 create_article 的结果尚待核实。下一步：等待写结果核实完成，不要再次调用该写工具", nil},
		{"failed calls again", in{contract: write, ledger: entry(abi.LedgerFailed, nil, nil), approval: approvedFor(digest)}, "PASS", []string{reserve(true)}},
		{"business failure calls again", in{contract: write, ledger: entry(abi.LedgerSuccess, &no, &earlier), approval: approvedFor(digest)}, "PASS", []string{reserve(true)}},
		{"another key calls again", in{contract: write, bound: `{"spaceId":8,"title":"Q3"}`, ledger: entry(abi.LedgerSuccess, &yes, &earlier)},
			"DEFERRED APPROVAL_REQUIRED: 该写操作须经用户确认。下一步：" + nextApproval, nil},

		// After the call: settlement (§14.4 write column).
		{"success settles", in{phase: abi.PhaseAfter, contract: write, result: &invoked, response: `{"code":200,"id":"a-2"}`},
			"PASS", []string{settle(abi.LedgerSuccess, &yes, invoked)}},
		{"business failure settles failed", in{phase: abi.PhaseAfter, contract: write, result: &bizFailed, response: `{"code":409,"errCode":"cms.409","msg":"标题重复"}`},
			"PASS", []string{settle(abi.LedgerFailed, &no, bizFailed)}},
		{"approved business failure asks the user", in{phase: abi.PhaseAfter, contract: write, result: &bizFailed, response: `{"code":409,"errCode":"cms.409","msg":"标题重复"}`, approval: approvedFor(digest)},
			"FAILED TOOL_BUSINESS_FAILED: 业务失败 [cms.409]：标题重复。下一步：" + nextFailed, []string{settle(abi.LedgerFailed, &no, bizFailed)}},
		{"approved business failure reported earlier", in{phase: abi.PhaseAfter, contract: write, result: &business, response: `{"code":409}`, approval: approvedFor(digest)},
			"FAILED TOOL_BUSINESS_FAILED: 业务失败 [cms.409]：标题重复。下一步：" + nextFailed, []string{settle(abi.LedgerFailed, &no, business)}},
		{"timeout is unknown", in{phase: abi.PhaseAfter, contract: write, result: &timeout, approval: approvedFor(digest)}, "PASS", []string{settle(abi.LedgerUnknown, nil, timeout)}},
		{"io error is unknown", in{phase: abi.PhaseAfter, contract: write, result: &io}, "PASS", []string{settle(abi.LedgerUnknown, nil, io)}},
		{"rpc error is unknown", in{phase: abi.PhaseAfter, contract: write, result: &rpc}, "PASS", []string{settle(abi.LedgerUnknown, nil, rpc)}},
		{"unknown error is unknown", in{phase: abi.PhaseAfter, contract: write, result: &unknown}, "PASS", []string{settle(abi.LedgerUnknown, nil, unknown)}},
		{"unreachable is failed", in{phase: abi.PhaseAfter, contract: write, result: &unreachable}, "PASS", []string{settle(abi.LedgerFailed, nil, unreachable)}},
		{"mcp tool error is failed", in{phase: abi.PhaseAfter, contract: write, result: &toolErr}, "PASS", []string{settle(abi.LedgerFailed, nil, toolErr)}},
		{"invalid params is failed", in{phase: abi.PhaseAfter, contract: write, result: &badParams}, "PASS", []string{settle(abi.LedgerFailed, nil, badParams)}},
		{"approved tool error asks the user", in{phase: abi.PhaseAfter, contract: write, result: &toolErr, approval: approvedFor(digest)},
			"FAILED MCP_TOOL_ERROR: MCP 工具 create_article 返回错误：boom。下一步：" + nextFailed, []string{settle(abi.LedgerFailed, nil, toolErr)}},
		{"approved tool error asks the user en", in{phase: abi.PhaseAfter, contract: write, result: &toolErr, approval: approvedFor(digest), locale: abi.LocaleEN},
			"FAILED MCP_TOOL_ERROR: MCP 工具 create_article 返回错误：boom. Next: explain the failure to the user with builtin_node_follow_up and ask how to proceed; call builtin_node_fail if the user stops; do not try another write on your own",
			[]string{settle(abi.LedgerFailed, nil, toolErr)}},
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
		})
	}
}

// TestReuseKeepsData checks that a reused write returns the recorded
// business payload as its data.
func TestReuseKeepsData(t *testing.T) {
	t.Parallel()
	v := both(t, in{contract: write, ledger: entry(abi.LedgerSuccess, &yes, &earlier)}.request())
	if v.Observation == nil || string(v.Observation.Data) != `{"code":200,"id":"a-1"}` {
		t.Fatalf("data = %+v", v.Observation)
	}
}

// TestLegacyKey: a write reserved before the canonical form became RFC
// 8785's has its ledger entry under the key's old form. After the upgrade the
// gate still finds it (reused, in flight, pending verification), a new entry
// under the current key goes first, and a reservation carries both keys so
// that the store's rule checks the old one too.
func TestLegacyKey(t *testing.T) {
	t.Parallel()
	// 1234567.5 was 1.2345675e+06 in the old form: the two keys differ.
	const args = `{"title":"Q3","spaceId":1234567.5}`
	tl, err := contract.ParseTool(tool, []byte(write))
	if err != nil {
		t.Fatal(err)
	}
	newKey, oldKey := tl.KeyFor([]byte(args)), tl.LegacyKeyFor([]byte(args))
	if newKey == oldKey {
		t.Fatal("one key in both forms; the test needs two")
	}
	d := func() string {
		s := sha256.Sum256([]byte(`{"spaceId":1234567.5,"title":"Q3"}`))
		return hex.EncodeToString(s[:])
	}()
	ledger := func(es ...abi.LedgerEntry) *abi.LedgerView { return &abi.LedgerView{Entries: es} }
	old := func(state abi.LedgerState) abi.LedgerEntry {
		return abi.LedgerEntry{Tool: tool, Key: oldKey, State: state, ArgsDigest: d, Result: &earlier}
	}
	reserveBoth := abi.EffectLedgerReserve + " " + string(mustJSON(abi.LedgerReserve{Tool: tool, Key: newKey, LegacyKey: oldKey, ArgsDigest: d, CallID: "call-9", Approved: true}))
	for _, tt := range []struct {
		name    string
		ledger  *abi.LedgerView
		want    string
		effects []string
	}{
		{"succeeded before the upgrade is reused", ledger(old(abi.LedgerSuccess)),
			"SUCCESS: 写操作 create_article 此前已对同一业务动作执行成功，本次未再调用，复用上次结果：文章已创建", nil},
		{"started before the upgrade is in flight", ledger(old(abi.LedgerStarted)),
			"DEFERRED WRITE_IN_FLIGHT: 写操作 create_article 正在进行中。下一步：等待该写操作结束，不要再次调用", nil},
		{"uncertain before the upgrade waits for verify", ledger(old(abi.LedgerUnknown)),
			"DEFERRED WRITE_PENDING_VERIFY: 写操作 create_article 的结果尚待核实。下一步：等待写结果核实完成，不要再次调用该写工具", nil},
		{"failed before the upgrade reserves with both keys", ledger(old(abi.LedgerFailed)), "PASS", []string{reserveBoth}},
		{"no entry reserves with both keys", nil, "PASS", []string{reserveBoth}},
		{"an entry under the current key goes first", ledger(old(abi.LedgerSuccess), abi.LedgerEntry{Tool: tool, Key: newKey, State: abi.LedgerFailed}, old(abi.LedgerStarted)),
			"PASS", []string{reserveBoth}},
		{"another tool's old entry does not count", ledger(abi.LedgerEntry{Tool: "other_write", Key: oldKey, State: abi.LedgerSuccess}), "PASS", []string{reserveBoth}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := in{contract: write, bound: args, ledger: tt.ledger, approval: approvedFor(d)}
			v := both(t, r.request())
			if got := describe(v, ""); got != tt.want {
				t.Errorf("verdict:\n got %s\nwant %s", got, tt.want)
			}
			if got := effects(v); !slices.Equal(got, tt.effects) {
				t.Errorf("effects:\n got %q\nwant %q", got, tt.effects)
			}
		})
	}
}
