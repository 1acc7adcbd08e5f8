package abi_test

import (
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
)

var allHints = []abi.Hint{
	abi.NextFixArgs, abi.NextFollowUp, abi.NextCallTool, abi.NextFail, abi.NextProvenance,
	abi.NextApproval, abi.NextApprovalMismatch, abi.NextCallWriteFirst, abi.NextApprovedFailed,
	abi.NextBusiness, abi.NextCatalog, abi.NextWaitVerify, abi.NextWaitInFlight, abi.NextChangeStrategy,
	abi.NextUseAnswer, abi.NextWriteDirectly, abi.NextRetryLater, abi.NextShrinkCall, abi.NextReportFailure,
	abi.NextTimeout, abi.NextOutputSet, abi.NextOptionalOutput, abi.NextFinishOutput, abi.NextSettleWrite,
	abi.NextDoTarget, abi.NextDoBusiness, abi.NextCiteEvidence, abi.NextDelegate, abi.NextReconfirm, abi.NextFallback,
	abi.NextDecideAgain, abi.NextReissueShorter, abi.NextVerifyLater, abi.NextDistinctCalls, abi.NextAuthFailed,
}

func TestHintsRegistered(t *testing.T) {
	t.Parallel()
	got := map[abi.Hint]bool{}
	for _, h := range abi.Hints() {
		if got[h] {
			t.Errorf("Hints() lists %s twice", h)
		}
		got[h] = true
	}
	if len(got) != len(allHints) {
		t.Errorf("Hints() has %d hints, want %d", len(got), len(allHints))
	}
	for _, h := range allHints {
		if !got[h] {
			t.Errorf("Hints() lacks %s", h)
		}
	}
}

func TestHintTexts(t *testing.T) {
	t.Parallel()
	for _, h := range allHints {
		t.Run(string(h), func(t *testing.T) {
			t.Parallel()
			if !strings.HasPrefix(string(h), "NEXT_") {
				t.Errorf("hint name %q does not start with NEXT_", h)
			}
			zh, en := h.Text(abi.LocaleZH), h.Text(abi.LocaleEN)
			if strings.TrimSpace(zh) == "" || strings.TrimSpace(en) == "" {
				t.Fatalf("empty text: zh %q en %q", zh, en)
			}
			if zh == en {
				t.Errorf("zh and en are the same: %q", zh)
			}
			if def := h.Text(""); def != zh {
				t.Errorf("Text(\"\") = %q, want the zh text %q", def, zh)
			}
			// A next step is appended after "下一步：" / "Next: ": it must
			// not repeat the label.
			if strings.Contains(zh, "下一步") || strings.Contains(en, "Next:") {
				t.Errorf("text repeats the label: zh %q en %q", zh, en)
			}
			kv := placeholderValues(zh, en)
			if len(placeholderValues(zh)) != len(placeholderValues(en)) {
				t.Errorf("placeholders differ: zh %q en %q", zh, en)
			}
			for _, l := range []abi.Locale{abi.LocaleZH, abi.LocaleEN} {
				got := h.Text(l, kv...)
				if strings.ContainsAny(got, "{}") {
					t.Errorf("Text(%q) = %q still has a placeholder", l, got)
				}
			}
		})
	}
}

func TestHintExactTexts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		hint abi.Hint
		l    abi.Locale
		kv   []string
		want string
	}{
		// TOOL_OBSERVATION §7.3, verbatim.
		{"approved failed zh (§7.3)", abi.NextApprovedFailed, abi.LocaleZH, nil,
			"用 builtin_node_follow_up 向用户说明失败原因并询问如何处理；用户不再继续时 builtin_node_fail；不要自行改用其它写操作补救"},
		{"approved failed en", abi.NextApprovedFailed, abi.LocaleEN, nil,
			"explain the failure to the user with builtin_node_follow_up and ask how to proceed; call builtin_node_fail if the user stops; do not try another write on your own"},
		{"optional output zh (§7.3)", abi.NextOptionalOutput, abi.LocaleZH, nil, "也可以不写，直接调用 builtin_node_finish"},
		{"approval names the held tool", abi.NextApproval, abi.LocaleZH, []string{"tool", "create_site"},
			"调用 builtin_node_approval 申请用户确认，toolName 填 create_site"},
		{"approval en", abi.NextApproval, abi.LocaleEN, []string{"tool", "create_site"},
			"ask the user to confirm with builtin_node_approval, toolName create_site"},
		{"mismatch names the held tool", abi.NextApprovalMismatch, abi.LocaleZH, []string{"gated", "create_site"},
			"调用 builtin_node_approval 时 toolName 填被拦下的写工具 create_site"},
		{"not gated: call the write first (§7.3)", abi.NextCallWriteFirst, abi.LocaleZH, nil, "先直接调用写工具，被拦下后再按提示申请确认"},
		{"output set", abi.NextOutputSet, abi.LocaleEN, []string{"keys", "a, b", "sources", "EVIDENCE"},
			"keys you may write: a, b; source types: EVIDENCE"},
		{"unknown hint", abi.Hint("NEXT_NOPE"), abi.LocaleZH, nil, ""},
		{"unknown hint en", abi.Hint("NEXT_NOPE"), abi.LocaleEN, []string{"a", "b"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.hint.Text(tt.l, tt.kv...); got != tt.want {
				t.Errorf("Text = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseLocale(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want abi.Locale
	}{
		{"", abi.LocaleZH},
		{"zh", abi.LocaleZH},
		{"zh-CN", abi.LocaleZH},
		{"en", abi.LocaleEN},
		{"en-US", abi.LocaleEN},
		{"en_GB", abi.LocaleEN},
		{"EN", abi.LocaleZH},
		{"e", abi.LocaleZH},
		{"fr", abi.LocaleZH},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			if got := abi.ParseLocale(tt.in); got != tt.want {
				t.Errorf("ParseLocale(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
