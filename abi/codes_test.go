package abi_test

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
)

// specCodes is the table of CONTRACT_SPEC §17, written out from the spec.
var specCodes = []struct {
	code abi.Code
	name string
	wire string
}{
	{abi.MCPToolError, "MCP_TOOL_ERROR", "agent_runtime.40003"},
	{abi.ToolBusinessFailed, "TOOL_BUSINESS_FAILED", "agent_runtime.40004"},
	{abi.MCPInvalidParams, "MCP_INVALID_PARAMS", "agent_runtime.40014"},
	{abi.MCPRPCError, "MCP_RPC_ERROR", "agent_runtime.40015"},
	{abi.ToolTimeout, "TOOL_TIMEOUT", "agent_runtime.40016"},
	{abi.ToolUnreachable, "TOOL_UNREACHABLE", "agent_runtime.40017"},
	{abi.ToolIOError, "TOOL_IO_ERROR", "agent_runtime.40018"},
	{abi.ToolError, "TOOL_ERROR", "agent_runtime.40029"},
	{abi.ArgJSONInvalid, "ARG_JSON_INVALID", "agent_runtime.40020"},
	{abi.ArgRejected, "ARG_REJECTED", "agent_runtime.40032"},
	{abi.ParamProvenanceFail, "PARAM_PROVENANCE_FAIL", "agent_runtime.40022"},
	{abi.ParamProvenanceCallTool, "PARAM_PROVENANCE_CALL_TOOL", "agent_runtime.40023"},
	{abi.ParamProvenanceAskUser, "PARAM_PROVENANCE_ASK_USER", "agent_runtime.40024"},
	{abi.ParamProvenanceRejected, "PARAM_PROVENANCE_REJECTED", "agent_runtime.40025"},
	{abi.FingerprintTrip, "FINGERPRINT_TRIP", "agent_runtime.40026"},
	{abi.CatalogDenied, "CATALOG_DENIED", "agent_runtime.40027"},
	{abi.StateKeyReserved, "STATE_KEY_RESERVED", "agent_runtime.40028"},
	{abi.WritePendingVerify, "WRITE_PENDING_VERIFY", "agent_runtime.40030"},
	{abi.WriteInFlight, "WRITE_IN_FLIGHT", "agent_runtime.40031"},
	{abi.ApprovalRequired, "APPROVAL_REQUIRED", "agent_runtime.42221"},
	{abi.WriteContractIncomplete, "WRITE_CONTRACT_INCOMPLETE", "agent_runtime.42206"},
	{abi.SourceReject, "SOURCE_REJECT", "agent_runtime.42223"},
	{abi.PlatformFieldForbidden, "PLATFORM_FIELD_FORBIDDEN", "agent_runtime.42236"},
	{abi.OutputPathInvalid, "OUTPUT_PATH_INVALID", "agent_runtime.42243"},
	{abi.OutputWriteForbidden, "OUTPUT_WRITE_FORBIDDEN", "agent_runtime.42244"},
	{abi.ApprovalNotGated, "APPROVAL_NOT_GATED", "agent_runtime.42245"},
	{abi.ApprovalToolMismatch, "APPROVAL_TOOL_MISMATCH", "agent_runtime.42246"},
	{abi.FollowUpAnswered, "FOLLOW_UP_ANSWERED", "agent_runtime.42247"},
	{abi.FollowUpUngrounded, "FOLLOW_UP_UNGROUNDED", "agent_runtime.42248"},
	{abi.EvidencePathInvalid, "EVIDENCE_PATH_INVALID", "agent_runtime.42235"},
	{abi.SkillNotFound, "SKILL_NOT_FOUND", "agent_runtime.40411"},
	{abi.DelegateForbidden, "DELEGATE_FORBIDDEN", "agent_runtime.42237"},
	{abi.DelegateRepeated, "DELEGATE_REPEATED", "agent_runtime.42239"},
	{abi.ProviderUnavailable, "PROVIDER_UNAVAILABLE", "agent_runtime.42212"},
}

// wardenCodes are the codes Warden adds (42250–42269).
var wardenCodes = []abi.Code{
	abi.FinishMissingOutput, abi.FinishOpenEvidence, abi.FinishOutputMissing, abi.FinishOutputEmpty,
	abi.FinishOutputSource, abi.FinishNeedTarget, abi.FinishNeedBusiness, abi.CitationInvalid,
	abi.FingerprintRepeat, abi.OutputSchemaMismatch, abi.EvidenceNotFound, abi.ApprovalExpired,
	abi.CallSkipped, abi.ModelOutputTruncated, abi.WriteVerifyTooEarly, abi.ApprovalArgsChanged,
	abi.ModelTurnInvalid,
	abi.ToolAuthFailed,
}

// pluginCodes are the host's plugin-failure codes (50001–50099).
var pluginCodes = []abi.Code{
	abi.PluginTrap, abi.PluginTimeout, abi.PluginContractViolation, abi.PluginUnavailable,
	abi.GuardUnavailable, abi.PluginOutputTooLarge, abi.PluginInputTooLarge, abi.PluginMemoryLimit,
}

func TestSpecCodesRegistered(t *testing.T) {
	t.Parallel()
	if len(specCodes) != 34 {
		t.Fatalf("spec table has %d rows, want 34", len(specCodes))
	}
	for _, sc := range specCodes {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			if string(sc.code) != sc.name {
				t.Errorf("constant = %q, want %q", sc.code, sc.name)
			}
			info, ok := sc.code.Info()
			if !ok {
				t.Fatalf("%s is not registered", sc.name)
			}
			if info.Code != sc.code {
				t.Errorf("Info().Code = %q, want %q", info.Code, sc.code)
			}
			if info.Wire != sc.wire {
				t.Errorf("Info().Wire = %q, want %q", info.Wire, sc.wire)
			}
			if got := sc.code.Wire(); got != sc.wire {
				t.Errorf("Wire() = %q, want %q", got, sc.wire)
			}
			num, _ := strconv.Atoi(strings.TrimPrefix(sc.wire, "agent_runtime."))
			if info.Number != num {
				t.Errorf("Info().Number = %d, want %d", info.Number, num)
			}
			if !sc.code.Known() {
				t.Errorf("Known() = false")
			}
			for _, in := range []string{sc.name, sc.wire} {
				got, err := abi.ParseCode(in)
				if err != nil || got != sc.code {
					t.Errorf("ParseCode(%q) = %q, %v; want %q, nil", in, got, err, sc.code)
				}
			}
		})
	}
}

func TestRegistryShape(t *testing.T) {
	t.Parallel()
	all := abi.Codes()
	if want := len(specCodes) + len(wardenCodes) + len(pluginCodes); len(all) != want {
		t.Errorf("len(Codes()) = %d, want %d", len(all), want)
	}
	if all[0].Code != abi.MCPToolError || all[len(all)-1].Code != abi.PluginMemoryLimit {
		t.Errorf("Codes() is not in registry order: first %s, last %s", all[0].Code, all[len(all)-1].Code)
	}
	spec := map[abi.Code]bool{}
	for _, sc := range specCodes {
		spec[sc.code] = true
	}
	names := map[abi.Code]bool{}
	numbers := map[int]abi.Code{}
	for _, i := range all {
		if names[i.Code] {
			t.Errorf("duplicate name %s", i.Code)
		}
		names[i.Code] = true
		if prev, dup := numbers[i.Number]; dup {
			t.Errorf("number %d used by %s and %s", i.Number, prev, i.Code)
		}
		numbers[i.Number] = i.Code
		if want := abi.WirePrefix + strconv.Itoa(i.Number); i.Wire != want {
			t.Errorf("%s: Wire = %q, want %q", i.Code, i.Wire, want)
		}
		if !spec[i.Code] && !(i.Number >= 42250 && i.Number <= 42269) && !(i.Number >= 50001 && i.Number <= 50099) {
			t.Errorf("%s (%d) is neither in CONTRACT_SPEC §17 nor in 42250–42269 or 50001–50099", i.Code, i.Number)
		}
	}
	if len(names) != len(all) {
		t.Errorf("%d distinct names for %d codes", len(names), len(all))
	}
	// Codes() returns a copy.
	all[0].Wire = "changed"
	if abi.Codes()[0].Wire != "agent_runtime.40003" {
		t.Errorf("Codes() exposes the registry")
	}
}

func TestWardenAndPluginCodeRanges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		codes  []abi.Code
		lo, hi int
	}{
		{"warden additions", wardenCodes, 42250, 42269},
		{"host plugin codes", pluginCodes, 50001, 50099},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range tt.codes {
				info, ok := c.Info()
				if !ok {
					t.Errorf("%s is not registered", c)
					continue
				}
				if info.Number < tt.lo || info.Number > tt.hi {
					t.Errorf("%s = %d, want in %d–%d", c, info.Number, tt.lo, tt.hi)
				}
			}
		})
	}
}

func TestApprovalToolMismatchNumber(t *testing.T) {
	t.Parallel()
	info, ok := abi.ApprovalToolMismatch.Info()
	if !ok || info.Number != 42246 || info.Wire != "agent_runtime.42246" {
		t.Errorf("APPROVAL_TOOL_MISMATCH = %d %q (ok %v), want 42246 agent_runtime.42246", info.Number, info.Wire, ok)
	}
}

var placeholderRE = regexp.MustCompile(`\{([a-z]+)\}`)

// placeholderValues returns kv pairs filling every {name} of ts with "<name>".
func placeholderValues(ts ...string) []string {
	var kv []string
	seen := map[string]bool{}
	for _, t := range ts {
		for _, m := range placeholderRE.FindAllStringSubmatch(t, -1) {
			if !seen[m[1]] {
				seen[m[1]] = true
				kv = append(kv, m[1], "<"+m[1]+">")
			}
		}
	}
	return kv
}

func TestCodeInfoContents(t *testing.T) {
	t.Parallel()
	categories := map[abi.Category]bool{
		abi.CategoryFormat: true, abi.CategoryArgument: true, abi.CategoryToolChoice: true,
		abi.CategoryExecution: true, abi.CategorySemantic: true, abi.CategoryPermission: true,
	}
	signals := map[abi.Signal]bool{abi.SignalRetry: true, abi.SignalChange: true, abi.SignalWait: true, abi.SignalStop: true}
	zhAdvice := []string{"请", "下一步", "调用 builtin", "builtin_"}
	enAdvice := []string{"please", "next:", "call builtin", "builtin_"}
	for _, info := range abi.Codes() {
		t.Run(string(info.Code), func(t *testing.T) {
			t.Parallel()
			if !categories[info.Category] {
				t.Errorf("category %q is not one of the six", info.Category)
			}
			if !signals[info.Signal] {
				t.Errorf("signal %q is unknown", info.Signal)
			}
			if strings.TrimSpace(info.ReasonZH) == "" || strings.TrimSpace(info.ReasonEN) == "" {
				t.Fatalf("empty reason: zh %q en %q", info.ReasonZH, info.ReasonEN)
			}
			// "申请" (to apply for) is a noun phrase of the spec's own
			// reasons, not the polite "请" of an instruction.
			zh := strings.ReplaceAll(info.ReasonZH, "申请", "")
			for _, w := range zhAdvice {
				if strings.Contains(zh, w) {
					t.Errorf("zh reason %q contains advice %q", info.ReasonZH, w)
				}
			}
			for _, w := range enAdvice {
				if strings.Contains(strings.ToLower(info.ReasonEN), w) {
					t.Errorf("en reason %q contains advice %q", info.ReasonEN, w)
				}
			}
			// Both locales use the same placeholders.
			zhKV, enKV := placeholderValues(info.ReasonZH), placeholderValues(info.ReasonEN)
			if len(zhKV) != len(enKV) {
				t.Errorf("placeholders differ: zh %v en %v", zhKV, enKV)
			}
			kv := placeholderValues(info.ReasonZH, info.ReasonEN)
			for _, l := range []abi.Locale{abi.LocaleZH, abi.LocaleEN, ""} {
				got := info.Reason(l, kv...)
				if strings.ContainsAny(got, "{}") {
					t.Errorf("Reason(%q) = %q still has a placeholder", l, got)
				}
				if via := info.Code.Reason(l, kv...); via != got {
					t.Errorf("Code.Reason(%q) = %q, CodeInfo.Reason = %q", l, via, got)
				}
				for i := 1; i < len(kv); i += 2 {
					if !strings.Contains(got, kv[i]) {
						t.Errorf("Reason(%q) = %q lacks %q", l, got, kv[i])
					}
				}
			}
			if got := info.Reason(abi.LocaleZH); got != info.ReasonZH {
				t.Errorf("Reason(zh) without values = %q, want template %q", got, info.ReasonZH)
			}
			if got := info.Reason(abi.LocaleEN); got != info.ReasonEN {
				t.Errorf("Reason(en) without values = %q, want template %q", got, info.ReasonEN)
			}
		})
	}
}

// TOOL_OBSERVATION §5: the DEFERRED producers' codes carry the wait signal.
func TestDeferredCodesWait(t *testing.T) {
	t.Parallel()
	for _, c := range []abi.Code{abi.ApprovalRequired, abi.WritePendingVerify, abi.WriteInFlight} {
		t.Run(string(c), func(t *testing.T) {
			t.Parallel()
			if info, _ := c.Info(); info.Signal != abi.SignalWait {
				t.Errorf("signal = %q, want %q", info.Signal, abi.SignalWait)
			}
		})
	}
}

func TestReasonExamples(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		code abi.Code
		l    abi.Locale
		kv   []string
		want string
	}{
		{"approval required zh (§7.3)", abi.ApprovalRequired, abi.LocaleZH, nil, "该写操作须经用户确认"},
		{"approval required en", abi.ApprovalRequired, abi.LocaleEN, nil, "this write must be confirmed by the user"},
		{"mismatch zh", abi.ApprovalToolMismatch, abi.LocaleZH, []string{"tool", "delete_site", "gated", "create_site"},
			"申请确认的工具 delete_site 与被拦下的写工具 create_site 不一致"},
		{"mismatch en", abi.ApprovalToolMismatch, abi.LocaleEN, []string{"tool", "delete_site", "gated", "create_site"},
			"approval asked for delete_site, but the write held by the gate is create_site"},
		{"timeout partly filled", abi.ToolTimeout, abi.LocaleZH, []string{"tool", "query_order"}, "工具 query_order 在 {timeout} 内没有返回"},
		{"zero locale is zh", abi.ToolUnreachable, "", []string{"tool", "t"}, "工具 t 不可达"},
		{"unregistered code gives its name", abi.Code("NOPE"), abi.LocaleEN, []string{"tool", "t"}, "NOPE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.code.Reason(tt.l, tt.kv...); got != tt.want {
				t.Errorf("Reason = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestUnregisteredCode(t *testing.T) {
	t.Parallel()
	c := abi.Code("NOT_A_CODE")
	if c.Known() {
		t.Error("Known() = true")
	}
	if info, ok := c.Info(); ok || info != (abi.CodeInfo{}) {
		t.Errorf("Info() = %+v, %v; want zero, false", info, ok)
	}
	if got := c.Wire(); got != "NOT_A_CODE" {
		t.Errorf("Wire() = %q, want the name", got)
	}
}

func TestParseCodeUnknown(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"", "approval_required", "APPROVAL_REQUIRED ", "42221", "agent_runtime.99999",
		"agent_runtime.042221", "agent_runtime.", "AGENT_RUNTIME.42221", "system.50001", "agent_runtime.APPROVAL_REQUIRED",
	} {
		t.Run(s, func(t *testing.T) {
			t.Parallel()
			got, err := abi.ParseCode(s)
			if !errors.Is(err, abi.ErrUnknownCode) {
				t.Fatalf("ParseCode(%q) = %q, %v; want ErrUnknownCode", s, got, err)
			}
			if want := `abi: code "` + s + `": unknown error code`; err.Error() != want {
				t.Errorf("error = %q, want %q", err, want)
			}
			if got != "" {
				t.Errorf("code = %q, want empty", got)
			}
		})
	}
}

func TestFill(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		tmpl string
		kv   []string
		want string
	}{
		{"all filled", "{a} and {b}", []string{"a", "1", "b", "2"}, "1 and 2"},
		{"repeated placeholder", "{a}{a}", []string{"a", "x"}, "xx"},
		{"missing value kept", "{a} and {b}", []string{"a", "1"}, "1 and {b}"},
		{"no values", "{a}", nil, "{a}"},
		{"odd pair ignored", "{a} {b}", []string{"a", "1", "b"}, "1 {b}"},
		{"single key", "{a}", []string{"a"}, "{a}"},
		{"no placeholder", "plain", []string{"a", "1"}, "plain"},
		{"extra keys", "{a}", []string{"z", "9", "a", "1"}, "1"},
		{"value with braces not refilled", "{a} {b}", []string{"a", "{b}", "b", "2"}, "{b} 2"},
		{"empty value", "[{a}]", []string{"a", ""}, "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := abi.Fill(tt.tmpl, tt.kv...); got != tt.want {
				t.Errorf("Fill(%q, %q) = %q, want %q", tt.tmpl, tt.kv, got, tt.want)
			}
		})
	}
}

// TestHostReservedCodes: exactly the plugin-failure range and the loop's two
// not-run codes are the host's.
func TestHostReservedCodes(t *testing.T) {
	t.Parallel()
	want := map[abi.Code]bool{
		abi.PluginTrap: true, abi.PluginTimeout: true, abi.PluginContractViolation: true, abi.PluginUnavailable: true,
		abi.GuardUnavailable: true, abi.PluginOutputTooLarge: true, abi.PluginInputTooLarge: true, abi.PluginMemoryLimit: true,
		abi.CallSkipped: true, abi.ModelOutputTruncated: true, abi.ModelTurnInvalid: true,
	}
	for _, info := range abi.Codes() {
		if info.HostReserved != want[info.Code] || info.Code.HostReserved() != want[info.Code] {
			t.Errorf("%s: HostReserved = %v (method %v), want %v", info.Code, info.HostReserved, info.Code.HostReserved(), want[info.Code])
		}
		if info.Number >= 50001 && info.Number <= 50099 && !info.HostReserved {
			t.Errorf("%s (%d) is in the plugin-failure range but not host-reserved", info.Code, info.Number)
		}
	}
	if abi.Code("NOPE").HostReserved() {
		t.Error("an unregistered code is host-reserved")
	}
}
