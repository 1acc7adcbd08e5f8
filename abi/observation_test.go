package abi_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/agentwarden/warden/abi"
)

const (
	specReason  = "缺少必填参数 [buyer]"
	specNext    = "补齐后再调用；无法补齐时调用 builtin_node_follow_up 询问用户，或调用 builtin_node_fail 说明原因"
	specMessage = "缺少必填参数 [buyer]。下一步：补齐后再调用；无法补齐时调用 builtin_node_follow_up 询问用户，或调用 builtin_node_fail 说明原因"
)

func TestMessageSpecExample(t *testing.T) {
	t.Parallel()
	o := abi.Rejected(abi.ArgRejected, specReason, specNext)
	if got := o.Message(); got != specMessage {
		t.Errorf("Message() =\n%q\nwant\n%q", got, specMessage)
	}
	want := abi.Observation{Outcome: abi.OutcomeRejected, Code: abi.ArgRejected, Text: specReason, Next: specNext}
	if !reflect.DeepEqual(o, want) {
		t.Errorf("Rejected = %+v, want %+v", o, want)
	}
}

func TestMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		obs    abi.Observation
		locale abi.Locale
		want   string
	}{
		{"zh template", abi.Deferred(abi.ApprovalRequired, "该写操作须经用户确认", "调用 builtin_node_approval"), "",
			"该写操作须经用户确认。下一步：调用 builtin_node_approval"},
		{"explicit zh", abi.Deferred(abi.ApprovalRequired, "该写操作须经用户确认", "调用 builtin_node_approval"), abi.LocaleZH,
			"该写操作须经用户确认。下一步：调用 builtin_node_approval"},
		{"en template", abi.Failed(abi.ToolTimeout, "tool t did not answer within 3s", "retry once later"), abi.LocaleEN,
			"tool t did not answer within 3s. Next: retry once later"},
		{"zh reason ending in 。", abi.Rejected(abi.ArgRejected, "缺少必填参数 [buyer]。", "补齐"), "",
			"缺少必填参数 [buyer]。下一步：补齐"},
		{"zh reason ending in .", abi.Rejected(abi.ArgRejected, "缺少必填参数 [buyer].", "补齐"), "",
			"缺少必填参数 [buyer]。下一步：补齐"},
		{"zh reason ending in ；", abi.Rejected(abi.ArgRejected, "缺少必填参数；", "补齐"), "",
			"缺少必填参数。下一步：补齐"},
		{"en reason ending in .", abi.Rejected(abi.ArgRejected, "missing [buyer].", "fill it in"), abi.LocaleEN,
			"missing [buyer]. Next: fill it in"},
		{"en reason ending in 。", abi.Rejected(abi.ArgRejected, "missing [buyer]。", "fill it in"), abi.LocaleEN,
			"missing [buyer]. Next: fill it in"},
		{"en reason ending in !", abi.Rejected(abi.ArgRejected, "missing [buyer]!", "fill it in"), abi.LocaleEN,
			"missing [buyer]. Next: fill it in"},
		{"several marks and spaces", abi.Rejected(abi.ArgRejected, "缺少参数。 。", "补齐"), "",
			"缺少参数。下一步：补齐"},
		{"spaces trimmed by the factory", abi.Rejected(abi.ArgRejected, "  缺少参数  ", "  补齐  "), "",
			"缺少参数。下一步：补齐"},
		{"success is the summary", abi.Success("已查到 3 条订单。", nil), "", "已查到 3 条订单。"},
		{"success en is the summary", abi.Success("found 3 orders", nil), abi.LocaleEN, "found 3 orders"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := tt.obs
			o.Locale = tt.locale
			if got := o.Message(); got != tt.want {
				t.Errorf("Message() = %q, want %q", got, tt.want)
			}
		})
	}
}

// recoverErr runs f and returns the error it panicked with.
func recoverErr(t *testing.T, f func()) (err error) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			t.Fatal("did not panic")
		}
		e, ok := r.(error)
		if !ok {
			t.Fatalf("panicked with %T %v, want an error", r, r)
		}
		err = e
	}()
	f()
	return nil
}

func TestFactoriesPanic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		f        func()
		sentinel error
		msg      string
	}{
		{"failed without code", func() { abi.Failed("", "r", "n") }, abi.ErrMissingCode,
			"abi: FAILED observation: non-success observation without an error code"},
		{"rejected without code", func() { abi.Rejected("", "r", "n") }, abi.ErrMissingCode,
			"abi: REJECTED observation: non-success observation without an error code"},
		{"deferred without code", func() { abi.Deferred("", "r", "n") }, abi.ErrMissingCode,
			"abi: DEFERRED observation: non-success observation without an error code"},
		{"failed unknown code", func() { abi.Failed("NOPE", "r", "n") }, abi.ErrUnknownCode,
			`abi: FAILED observation code "NOPE": unknown error code`},
		{"rejected wire form is not a code name", func() { abi.Rejected("agent_runtime.40032", "r", "n") }, abi.ErrUnknownCode,
			`abi: REJECTED observation code "agent_runtime.40032": unknown error code`},
		{"deferred unknown code", func() { abi.Deferred("APPROVAL", "r", "n") }, abi.ErrUnknownCode,
			`abi: DEFERRED observation code "APPROVAL": unknown error code`},
		{"failed empty reason", func() { abi.Failed(abi.ToolTimeout, "", "n") }, abi.ErrMissingReason,
			"abi: FAILED observation TOOL_TIMEOUT: non-success observation without a reason"},
		{"rejected blank reason", func() { abi.Rejected(abi.ArgRejected, " \t\n", "n") }, abi.ErrMissingReason,
			"abi: REJECTED observation ARG_REJECTED: non-success observation without a reason"},
		{"deferred empty reason", func() { abi.Deferred(abi.ApprovalRequired, "", "n") }, abi.ErrMissingReason,
			"abi: DEFERRED observation APPROVAL_REQUIRED: non-success observation without a reason"},
		{"failed empty next", func() { abi.Failed(abi.ToolTimeout, "r", "", json.RawMessage(`{}`)) }, abi.ErrMissingNext,
			"abi: FAILED observation TOOL_TIMEOUT: non-success observation without a next step"},
		{"rejected blank next", func() { abi.Rejected(abi.ArgRejected, "r", "  ") }, abi.ErrMissingNext,
			"abi: REJECTED observation ARG_REJECTED: non-success observation without a next step"},
		{"deferred empty next", func() { abi.Deferred(abi.ApprovalRequired, "r", "") }, abi.ErrMissingNext,
			"abi: DEFERRED observation APPROVAL_REQUIRED: non-success observation without a next step"},
		{"missing code wins over missing reason and next", func() { abi.Rejected("", "", "") }, abi.ErrMissingCode,
			"abi: REJECTED observation: non-success observation without an error code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := recoverErr(t, tt.f)
			if !errors.Is(err, tt.sentinel) {
				t.Errorf("panic error = %v, want %v", err, tt.sentinel)
			}
			if err.Error() != tt.msg {
				t.Errorf("panic error = %q, want %q", err, tt.msg)
			}
		})
	}
}

func TestBuild(t *testing.T) {
	t.Parallel()
	data := json.RawMessage(`{"status":500}`)
	tests := []struct {
		name     string
		outcome  abi.Outcome
		code     abi.Code
		text     string
		next     string
		data     json.RawMessage
		want     abi.Observation
		sentinel error
		msg      string
	}{
		{name: "failed", outcome: abi.OutcomeFailed, code: abi.ToolBusinessFailed, text: " 业务失败 [system.50001]：库存不足 ", next: "修正参数", data: data,
			want: abi.Observation{Outcome: abi.OutcomeFailed, Code: abi.ToolBusinessFailed, Text: "业务失败 [system.50001]：库存不足", Next: "修正参数", Data: data}},
		{name: "rejected", outcome: abi.OutcomeRejected, code: abi.CatalogDenied, text: "r", next: "n",
			want: abi.Observation{Outcome: abi.OutcomeRejected, Code: abi.CatalogDenied, Text: "r", Next: "n"}},
		{name: "deferred", outcome: abi.OutcomeDeferred, code: abi.WriteInFlight, text: "r", next: "n",
			want: abi.Observation{Outcome: abi.OutcomeDeferred, Code: abi.WriteInFlight, Text: "r", Next: "n"}},
		{name: "success", outcome: abi.OutcomeSuccess, text: "ok", data: data,
			want: abi.Observation{Outcome: abi.OutcomeSuccess, Text: "ok", Data: data}},
		{name: "success with empty text", outcome: abi.OutcomeSuccess,
			want: abi.Observation{Outcome: abi.OutcomeSuccess}},
		{name: "success with code", outcome: abi.OutcomeSuccess, code: abi.ToolError, text: "ok",
			sentinel: abi.ErrCodeOnSuccess, msg: `abi: observation code "TOOL_ERROR": success observation with an error code`},
		{name: "zero outcome", outcome: 0, code: abi.ToolError, text: "r", next: "n",
			sentinel: abi.ErrUnknownOutcome, msg: "abi: observation: unknown outcome"},
		{name: "out of range outcome", outcome: 9, text: "r", next: "n",
			sentinel: abi.ErrUnknownOutcome, msg: "abi: observation: unknown outcome"},
		{name: "missing code", outcome: abi.OutcomeFailed, text: "r", next: "n",
			sentinel: abi.ErrMissingCode, msg: "abi: FAILED observation: non-success observation without an error code"},
		{name: "unknown code", outcome: abi.OutcomeRejected, code: "NOPE", text: "r", next: "n",
			sentinel: abi.ErrUnknownCode, msg: `abi: REJECTED observation code "NOPE": unknown error code`},
		{name: "missing reason", outcome: abi.OutcomeDeferred, code: abi.ApprovalRequired, text: "  ", next: "n",
			sentinel: abi.ErrMissingReason, msg: "abi: DEFERRED observation APPROVAL_REQUIRED: non-success observation without a reason"},
		{name: "missing next", outcome: abi.OutcomeFailed, code: abi.ToolTimeout, text: "r",
			sentinel: abi.ErrMissingNext, msg: "abi: FAILED observation TOOL_TIMEOUT: non-success observation without a next step"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := abi.Build(tt.outcome, tt.code, tt.text, tt.next, tt.data)
			if tt.sentinel != nil {
				if !errors.Is(err, tt.sentinel) {
					t.Fatalf("Build error = %v, want %v", err, tt.sentinel)
				}
				if err.Error() != tt.msg {
					t.Errorf("Build error = %q, want %q", err, tt.msg)
				}
				if !reflect.DeepEqual(got, abi.Observation{}) {
					t.Errorf("Build returned %+v with an error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Build = %+v, want %+v", got, tt.want)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("Validate() = %v", err)
			}
		})
	}
}

func TestFactories(t *testing.T) {
	t.Parallel()
	data := json.RawMessage(`{"error":"timeout"}`)
	tests := []struct {
		name string
		got  abi.Observation
		want abi.Observation
	}{
		{"success", abi.Success("ok", data), abi.Observation{Outcome: abi.OutcomeSuccess, Text: "ok", Data: data}},
		{"success without data", abi.Success("ok", nil), abi.Observation{Outcome: abi.OutcomeSuccess, Text: "ok"}},
		{"failed with data", abi.Failed(abi.ToolTimeout, "r", "n", data), abi.Observation{Outcome: abi.OutcomeFailed, Code: abi.ToolTimeout, Text: "r", Next: "n", Data: data}},
		{"failed without data", abi.Failed(abi.ToolTimeout, "r", "n"), abi.Observation{Outcome: abi.OutcomeFailed, Code: abi.ToolTimeout, Text: "r", Next: "n"}},
		{"rejected", abi.Rejected(abi.FingerprintTrip, "r", "n"), abi.Observation{Outcome: abi.OutcomeRejected, Code: abi.FingerprintTrip, Text: "r", Next: "n"}},
		{"deferred", abi.Deferred(abi.WritePendingVerify, "r", "n"), abi.Observation{Outcome: abi.OutcomeDeferred, Code: abi.WritePendingVerify, Text: "r", Next: "n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if !reflect.DeepEqual(tt.got, tt.want) {
				t.Errorf("got %+v, want %+v", tt.got, tt.want)
			}
			if err := tt.got.Validate(); err != nil {
				t.Errorf("Validate() = %v", err)
			}
			info, ok := tt.got.Info()
			if tt.want.Outcome == abi.OutcomeSuccess {
				if tt.got.Code != "" || ok {
					t.Errorf("success carries code %q (Info ok %v)", tt.got.Code, ok)
				}
				return
			}
			if !ok || info.Code != tt.want.Code {
				t.Errorf("Info() = %+v, %v; want %s", info, ok, tt.want.Code)
			}
		})
	}
}

func TestValidateHandBuilt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		obs      abi.Observation
		sentinel error
	}{
		{"zero value", abi.Observation{}, abi.ErrUnknownOutcome},
		{"success with code", abi.Observation{Outcome: abi.OutcomeSuccess, Code: abi.ToolError}, abi.ErrCodeOnSuccess},
		{"rejected without next", abi.Observation{Outcome: abi.OutcomeRejected, Code: abi.ArgRejected, Text: "r"}, abi.ErrMissingNext},
		{"failed unknown code", abi.Observation{Outcome: abi.OutcomeFailed, Code: "X", Text: "r", Next: "n"}, abi.ErrUnknownCode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := tt.obs.Validate(); !errors.Is(err, tt.sentinel) {
				t.Errorf("Validate() = %v, want %v", err, tt.sentinel)
			}
		})
	}
}

func TestWithNext(t *testing.T) {
	t.Parallel()
	base := abi.Failed(abi.ToolBusinessFailed, "业务失败：库存不足", "修正参数后再调用")
	approved := abi.NextApprovedFailed.Text(abi.LocaleZH)
	tests := []struct {
		name     string
		obs      abi.Observation
		next     string
		wantNext string
		wantMsg  string
	}{
		{"replaces the next step", base, approved, approved, "业务失败：库存不足。下一步：" + approved},
		{"trims the new next step", base, "  重试  ", "重试", "业务失败：库存不足。下一步：重试"},
		{"empty keeps the old one", base, "", "修正参数后再调用", "业务失败：库存不足。下一步：修正参数后再调用"},
		{"blank keeps the old one", base, " \t", "修正参数后再调用", "业务失败：库存不足。下一步：修正参数后再调用"},
		{"success unchanged", abi.Success("ok", nil), "重试", "", "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.obs.WithNext(tt.next)
			if got.Next != tt.wantNext {
				t.Errorf("Next = %q, want %q", got.Next, tt.wantNext)
			}
			if msg := got.Message(); msg != tt.wantMsg {
				t.Errorf("Message() = %q, want %q", msg, tt.wantMsg)
			}
			if got.Outcome != tt.obs.Outcome || got.Code != tt.obs.Code || got.Text != tt.obs.Text {
				t.Errorf("WithNext changed more than Next: %+v -> %+v", tt.obs, got)
			}
		})
	}
	if base.Next != "修正参数后再调用" {
		t.Errorf("WithNext modified its receiver: Next = %q", base.Next)
	}
}

func TestObservationMarshalJSON(t *testing.T) {
	t.Parallel()
	en := abi.Failed(abi.ToolTimeout, "tool t did not answer within 3s", "retry once later", json.RawMessage(`{"ms":3000}`))
	en.Locale = abi.LocaleEN
	tests := []struct {
		name string
		obs  abi.Observation
		want string
	}{
		{"rejected", abi.Rejected(abi.ArgRejected, specReason, "补齐后再调用"),
			`{"outcome":"REJECTED","code":"ARG_REJECTED","text":"缺少必填参数 [buyer]","next":"补齐后再调用","wire":"agent_runtime.40032","category":"argument","signal":"change","message":"缺少必填参数 [buyer]。下一步：补齐后再调用"}`},
		{"deferred", abi.Deferred(abi.ApprovalRequired, "该写操作须经用户确认", "调用 builtin_node_approval"),
			`{"outcome":"DEFERRED","code":"APPROVAL_REQUIRED","text":"该写操作须经用户确认","next":"调用 builtin_node_approval","wire":"agent_runtime.42221","category":"permission","signal":"wait","message":"该写操作须经用户确认。下一步：调用 builtin_node_approval"}`},
		{"failed en with data", en,
			`{"outcome":"FAILED","code":"TOOL_TIMEOUT","text":"tool t did not answer within 3s","next":"retry once later","data":{"ms":3000},"locale":"en","wire":"agent_runtime.40016","category":"execution","signal":"retry","message":"tool t did not answer within 3s. Next: retry once later"}`},
		{"success", abi.Success("已查到订单", json.RawMessage(`{"id":7}`)),
			`{"outcome":"SUCCESS","text":"已查到订单","data":{"id":7},"message":"已查到订单"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(tt.obs)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if string(b) != tt.want {
				t.Errorf("Marshal =\n%s\nwant\n%s", b, tt.want)
			}
			// Through a pointer (as in Verdict and Request) too.
			pb, err := json.Marshal(&tt.obs)
			if err != nil || string(pb) != tt.want {
				t.Errorf("Marshal(&o) = %s, %v", pb, err)
			}
			var back abi.Observation
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if !reflect.DeepEqual(back, tt.obs) {
				t.Errorf("round trip = %+v, want %+v", back, tt.obs)
			}
		})
	}
}

func TestObservationMarshalInvalid(t *testing.T) {
	t.Parallel()
	_, err := json.Marshal(abi.Observation{Text: "x"})
	if !errors.Is(err, abi.ErrUnknownOutcome) {
		t.Errorf("Marshal(zero outcome) error = %v, want ErrUnknownOutcome", err)
	}
}

func TestObservationUnmarshalUnknownOutcome(t *testing.T) {
	t.Parallel()
	var o abi.Observation
	err := json.Unmarshal([]byte(`{"outcome":"MAYBE","text":"x"}`), &o)
	if !errors.Is(err, abi.ErrUnknownOutcome) {
		t.Errorf("Unmarshal error = %v, want ErrUnknownOutcome", err)
	}
}
