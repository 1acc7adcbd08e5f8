package abi_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/agentwarden/warden/abi"
)

var (
	guardManifest = abi.Manifest{
		Name: "g", Version: "1.0.0", ABI: 1, Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore},
		Capabilities: []abi.Capability{abi.CapEffectLedger, abi.CapEffectFingerprint},
	}
	builtinManifest = abi.Manifest{
		Name: "b", Version: "1.0.0", ABI: 1, Role: abi.RoleBuiltin,
		Tools:        []abi.ToolSpec{{Name: "builtin_output_set", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		Capabilities: []abi.Capability{abi.CapEffectOutput},
	}
)

func obsPtr(o abi.Observation) *abi.Observation { return &o }

func TestRecorder(t *testing.T) {
	t.Parallel()
	violation := func(code abi.Code, kind abi.ViolationKind, detail string) *abi.Violation {
		return &abi.Violation{Code: code, Kind: kind, Detail: detail}
	}
	cv := abi.PluginContractViolation
	tests := []struct {
		name      string
		m         *abi.Manifest
		maxOutput int
		steps     func(r *abi.Recorder)
		want      abi.Verdict
		violation *abi.Violation
	}{
		{name: "one success", m: &builtinManifest,
			steps: func(r *abi.Recorder) { r.Success("已写入", []byte(`{"key":"a"}`)) },
			want:  abi.Verdict{Observation: obsPtr(abi.Success("已写入", json.RawMessage(`{"key":"a"}`)))}},
		{name: "success without data", m: &guardManifest,
			steps: func(r *abi.Recorder) { r.Success("", nil) },
			want:  abi.Verdict{Observation: obsPtr(abi.Success("", nil))}},
		{name: "one rejected by name", m: &builtinManifest,
			steps: func(r *abi.Recorder) {
				r.Result(abi.OutcomeRejected, "OUTPUT_WRITE_FORBIDDEN", "产出键 x 未声明", "可写的键：a", nil)
			},
			want: abi.Verdict{Observation: obsPtr(abi.Rejected(abi.OutputWriteForbidden, "产出键 x 未声明", "可写的键：a"))}},
		{name: "one failed by wire form with data", m: &guardManifest,
			steps: func(r *abi.Recorder) {
				r.Result(abi.OutcomeFailed, "agent_runtime.40016", " 工具超时 ", " 稍后重试 ", []byte(`{"ms":1}`))
			},
			want: abi.Verdict{Observation: obsPtr(abi.Failed(abi.ToolTimeout, "工具超时", "稍后重试", json.RawMessage(`{"ms":1}`)))}},
		{name: "one deferred", m: &guardManifest,
			steps: func(r *abi.Recorder) {
				r.Result(abi.OutcomeDeferred, "APPROVAL_REQUIRED", "该写操作须经用户确认", "申请确认", nil)
			},
			want: abi.Verdict{Observation: obsPtr(abi.Deferred(abi.ApprovalRequired, "该写操作须经用户确认", "申请确认"))}},
		{name: "guard pass with args and facts", m: &guardManifest,
			steps: func(r *abi.Recorder) {
				r.Pass([]byte(`{"buyer":"b1"}`), []byte(`[{"path":"buyer","source":"USER","detail":"turn 2"}]`))
			},
			want: abi.Verdict{Pass: true, Args: json.RawMessage(`{"buyer":"b1"}`), Facts: []abi.Fact{{Path: "buyer", Source: "USER", Detail: "turn 2"}}}},
		{name: "guard pass bare", m: &guardManifest,
			steps: func(r *abi.Recorder) { r.Pass(nil, nil) },
			want:  abi.Verdict{Pass: true}},
		{name: "guard pass with null facts", m: &guardManifest,
			steps: func(r *abi.Recorder) { r.Pass([]byte(`{}`), []byte(`null`)) },
			want:  abi.Verdict{Pass: true, Args: json.RawMessage(`{}`)}},
		{name: "granted effects recorded in order", m: &guardManifest,
			steps: func(r *abi.Recorder) {
				r.Effect(abi.EffectLedgerReserve, []byte(`{"tool":"create_site"}`))
				r.Pass(nil, nil)
				r.Effect(abi.EffectFingerprintRecord, nil)
			},
			want: abi.Verdict{Pass: true, Effects: []abi.Effect{
				{Kind: abi.EffectLedgerReserve, Payload: json.RawMessage(`{"tool":"create_site"}`)},
				{Kind: abi.EffectFingerprintRecord},
			}}},
		{name: "charge within the limit", m: &guardManifest, maxOutput: 10,
			steps: func(r *abi.Recorder) {
				if !r.Charge(4) || !r.Charge(6) || !r.Charge(0) {
					panic("Charge refused bytes within the limit")
				}
				r.Pass(nil, nil)
			},
			want: abi.Verdict{Pass: true}},
		{name: "no limit", m: &guardManifest, maxOutput: 0,
			steps: func(r *abi.Recorder) {
				if !r.Charge(1 << 30) {
					panic("Charge refused without a limit")
				}
				r.Pass(nil, nil)
			},
			want: abi.Verdict{Pass: true}},

		{name: "second result", m: &guardManifest,
			steps:     func(r *abi.Recorder) { r.Success("ok", nil); r.Result(abi.OutcomeFailed, "TOOL_ERROR", "r", "n", nil) },
			violation: violation(cv, abi.ViolationSecondResult, "")},
		{name: "pass then success", m: &guardManifest,
			steps:     func(r *abi.Recorder) { r.Pass(nil, nil); r.Success("ok", nil) },
			violation: violation(cv, abi.ViolationSecondResult, "")},
		{name: "no result", m: &guardManifest,
			steps:     func(r *abi.Recorder) {},
			violation: violation(cv, abi.ViolationNoResult, "")},
		{name: "effects only is no result", m: &guardManifest,
			steps:     func(r *abi.Recorder) { r.Effect(abi.EffectLedgerSettle, nil) },
			violation: violation(cv, abi.ViolationNoResult, "")},
		{name: "missing code", m: &builtinManifest,
			steps:     func(r *abi.Recorder) { r.Result(abi.OutcomeRejected, "", "r", "n", nil) },
			violation: violation(cv, abi.ViolationMissingCode, "")},
		{name: "unknown code", m: &builtinManifest,
			steps:     func(r *abi.Recorder) { r.Result(abi.OutcomeRejected, "NOPE", "r", "n", nil) },
			violation: violation(cv, abi.ViolationUnknownCode, "NOPE")},
		{name: "unknown wire code", m: &builtinManifest,
			steps:     func(r *abi.Recorder) { r.Result(abi.OutcomeFailed, "agent_runtime.49999", "r", "n", nil) },
			violation: violation(cv, abi.ViolationUnknownCode, "agent_runtime.49999")},
		{name: "missing reason", m: &builtinManifest,
			steps:     func(r *abi.Recorder) { r.Result(abi.OutcomeRejected, "agent_runtime.40032", " ", "n", nil) },
			violation: violation(cv, abi.ViolationMissingReason, "ARG_REJECTED")},
		{name: "missing next", m: &builtinManifest,
			steps:     func(r *abi.Recorder) { r.Result(abi.OutcomeDeferred, "WRITE_IN_FLIGHT", "r", "", nil) },
			violation: violation(cv, abi.ViolationMissingNext, "WRITE_IN_FLIGHT")},
		{name: "pass from a builtin", m: &builtinManifest,
			steps:     func(r *abi.Recorder) { r.Pass(nil, nil) },
			violation: violation(cv, abi.ViolationPassNotAllowed, "")},
		{name: "pass with array args", m: &guardManifest,
			steps:     func(r *abi.Recorder) { r.Pass([]byte(`[1]`), nil) },
			violation: violation(cv, abi.ViolationBadArgs, "")},
		{name: "pass with null args", m: &guardManifest,
			steps:     func(r *abi.Recorder) { r.Pass([]byte(`null`), nil) },
			violation: violation(cv, abi.ViolationBadArgs, "")},
		{name: "pass with string args", m: &guardManifest,
			steps:     func(r *abi.Recorder) { r.Pass([]byte(`"x"`), nil) },
			violation: violation(cv, abi.ViolationBadArgs, "")},
		{name: "pass with invalid args", m: &guardManifest,
			steps:     func(r *abi.Recorder) { r.Pass([]byte(`{`), nil) },
			violation: violation(cv, abi.ViolationBadArgs, "")},
		{name: "facts not a list", m: &guardManifest,
			steps:     func(r *abi.Recorder) { r.Pass(nil, []byte(`{"path":"a"}`)) },
			violation: violation(cv, abi.ViolationBadFacts, "")},
		{name: "facts with wrong field type", m: &guardManifest,
			steps:     func(r *abi.Recorder) { r.Pass(nil, []byte(`[{"path":1}]`)) },
			violation: violation(cv, abi.ViolationBadFacts, "")},
		{name: "facts not JSON", m: &guardManifest,
			steps:     func(r *abi.Recorder) { r.Pass(nil, []byte(`[`)) },
			violation: violation(cv, abi.ViolationBadFacts, "")},
		{name: "pass with a key twice in args", m: &guardManifest,
			steps:     func(r *abi.Recorder) { r.Pass([]byte(`{"site":{"id":1,"id":2}}`), nil) },
			violation: violation(cv, abi.ViolationBadArgs, `duplicate key "id" in $.site`)},
		{name: "facts with a key in another case", m: &guardManifest,
			steps:     func(r *abi.Recorder) { r.Pass(nil, []byte(`[{"path":"a","Source":"USER"}]`)) },
			violation: violation(cv, abi.ViolationBadFacts, `key in the wrong case: "Source" in $[0] must be spelled "source"`)},
		{name: "facts with a key twice", m: &guardManifest,
			steps:     func(r *abi.Recorder) { r.Pass(nil, []byte(`[{"path":"a","source":"USER","source":"TOOL"}]`)) },
			violation: violation(cv, abi.ViolationBadFacts, `duplicate key "source" in $[0]`)},
		{name: "facts with an unknown key", m: &guardManifest,
			steps:     func(r *abi.Recorder) { r.Pass(nil, []byte(`[{"path":"a","source":"USER","trusted":true}]`)) },
			violation: violation(cv, abi.ViolationBadFacts, `unknown key "trusted" in $[0]`)},
		{name: "success data with a key twice", m: &builtinManifest,
			steps:     func(r *abi.Recorder) { r.Success("ok", []byte(`[{"ok":true,"ok":false}]`)) },
			violation: violation(cv, abi.ViolationBadData, `duplicate key "ok" in $[0]`)},
		{name: "failure data with a key twice", m: &builtinManifest,
			steps:     func(r *abi.Recorder) { r.Result(abi.OutcomeFailed, "TOOL_ERROR", "r", "n", []byte(`{"a":1,"a":1}`)) },
			violation: violation(cv, abi.ViolationBadData, `duplicate key "a" in $`)},
		{name: "effect payload with a key twice", m: &builtinManifest,
			steps: func(r *abi.Recorder) {
				r.Effect(abi.EffectOutputWrite, []byte(`{"key":"a","key":"b"}`))
				r.Success("ok", nil)
			},
			violation: violation(cv, abi.ViolationBadData, abi.EffectOutputWrite+`: duplicate key "key" in $`)},
		{name: "keys differing in case are two keys", m: &builtinManifest,
			steps: func(r *abi.Recorder) { r.Success("ok", []byte(`{"a":1,"A":2}`)) },
			want:  abi.Verdict{Observation: obsPtr(abi.Success("ok", json.RawMessage(`{"a":1,"A":2}`)))}},
		{name: "success with invalid data", m: &builtinManifest,
			steps:     func(r *abi.Recorder) { r.Success("ok", []byte(`{"a":`)) },
			violation: violation(cv, abi.ViolationBadData, "")},
		{name: "failure with invalid data", m: &builtinManifest,
			steps:     func(r *abi.Recorder) { r.Result(abi.OutcomeFailed, "TOOL_ERROR", "r", "n", []byte(`nope`)) },
			violation: violation(cv, abi.ViolationBadData, "")},
		{name: "unknown effect", m: &guardManifest,
			steps:     func(r *abi.Recorder) { r.Effect("ledger.burn", nil); r.Pass(nil, nil) },
			violation: violation(cv, abi.ViolationUnknownEffect, "ledger.burn")},
		{name: "effect not granted", m: &guardManifest,
			steps:     func(r *abi.Recorder) { r.Pass(nil, nil); r.Effect(abi.EffectNodeFail, []byte(`{}`)) },
			violation: violation(cv, abi.ViolationEffectNotGranted, abi.EffectNodeFail)},
		{name: "effect with invalid payload", m: &builtinManifest,
			steps:     func(r *abi.Recorder) { r.Effect(abi.EffectOutputWrite, []byte(`{`)); r.Success("ok", nil) },
			violation: violation(cv, abi.ViolationBadData, abi.EffectOutputWrite)},
		{name: "charge over the limit", m: &guardManifest, maxOutput: 10,
			steps: func(r *abi.Recorder) {
				r.Charge(6)
				if r.Charge(5) {
					panic("Charge accepted bytes over the limit")
				}
				if r.Charge(1) {
					panic("Charge accepted bytes after a violation")
				}
				r.Pass(nil, nil)
				r.Effect("nope", nil)
			},
			violation: violation(abi.PluginOutputTooLarge, abi.ViolationOutputTooLarge, "10")},
		{name: "negative charge", m: &guardManifest, maxOutput: 10,
			steps:     func(r *abi.Recorder) { r.Charge(-1); r.Pass(nil, nil) },
			violation: violation(abi.PluginOutputTooLarge, abi.ViolationOutputTooLarge, "10")},
		{name: "first violation sticks", m: &builtinManifest,
			steps: func(r *abi.Recorder) {
				r.Effect(abi.EffectLedgerReserve, nil) // not granted
				r.Pass(nil, nil)                       // not allowed
				r.Success("ok", nil)
				r.Success("again", nil)
				r.Charge(-1)
			},
			violation: violation(cv, abi.ViolationEffectNotGranted, abi.EffectLedgerReserve)},
		{name: "host-detected violation", m: &guardManifest,
			steps:     func(r *abi.Recorder) { r.Violate(abi.ViolationBadPointer, "0x10+8"); r.Pass(nil, nil) },
			violation: violation(cv, abi.ViolationBadPointer, "0x10+8")},
		{name: "violation after a result voids it and its effects", m: &guardManifest,
			steps: func(r *abi.Recorder) {
				r.Effect(abi.EffectLedgerReserve, nil)
				r.Pass(nil, nil)
				r.Violate(abi.ViolationBadPointer, "")
			},
			violation: violation(cv, abi.ViolationBadPointer, "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := abi.NewRecorder(tt.m, tt.maxOutput)
			tt.steps(r)
			v, err := r.Finish()
			if tt.violation == nil {
				if err != nil {
					t.Fatalf("Finish: %v", err)
				}
				if !reflect.DeepEqual(v, tt.want) {
					t.Errorf("verdict =\n%+v\nwant\n%+v", v, tt.want)
				}
				if v.Observation != nil {
					if err := v.Observation.Validate(); err != nil {
						t.Errorf("observation does not validate: %v", err)
					}
				}
				return
			}
			var got *abi.Violation
			if !errors.As(err, &got) {
				t.Fatalf("Finish = %+v, %v; want a *Violation", v, err)
			}
			if *got != *tt.violation {
				t.Errorf("violation = %+v, want %+v", *got, *tt.violation)
			}
			if !reflect.DeepEqual(v, abi.Verdict{}) {
				t.Errorf("verdict = %+v with a violation, want zero", v)
			}
			// Finish is stable.
			if _, again := r.Finish(); again != err {
				t.Errorf("second Finish = %v, want %v", again, err)
			}
		})
	}
}

func TestRecorderSuccessOutcomeThroughResult(t *testing.T) {
	t.Parallel()
	r := abi.NewRecorder(&guardManifest, 0)
	r.Result(abi.OutcomeSuccess, "TOOL_ERROR", "r", "n", nil)
	_, err := r.Finish()
	var v *abi.Violation
	if !errors.As(err, &v) || v.Code != abi.PluginContractViolation {
		t.Errorf("Finish = %v, want a PLUGIN_CONTRACT_VIOLATION", err)
	}
}

func TestRecorderCopiesInput(t *testing.T) {
	t.Parallel()
	r := abi.NewRecorder(&guardManifest, 0)
	args := []byte(`{"a":1}`)
	payload := []byte(`{"b":2}`)
	r.Pass(args, nil)
	r.Effect(abi.EffectLedgerReserve, payload)
	copy(args, `{"a":9}`)
	copy(payload, `{"b":9}`)
	v, err := r.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if string(v.Args) != `{"a":1}` || string(v.Effects[0].Payload) != `{"b":2}` {
		t.Errorf("recorder kept caller memory: args %s payload %s", v.Args, v.Effects[0].Payload)
	}
}

func TestRecorderReset(t *testing.T) {
	t.Parallel()
	r := abi.NewRecorder(&guardManifest, 8)
	r.Effect(abi.EffectLedgerReserve, nil)
	r.Charge(9)
	if _, err := r.Finish(); err == nil {
		t.Fatal("Finish succeeded over the limit")
	}
	r.Reset()
	if !r.Charge(8) {
		t.Fatal("Charge after Reset refused 8 bytes")
	}
	r.Pass(nil, nil)
	v, err := r.Finish()
	if err != nil {
		t.Fatalf("Finish after Reset: %v", err)
	}
	if !reflect.DeepEqual(v, abi.Verdict{Pass: true}) {
		t.Errorf("verdict after Reset = %+v, want a bare pass", v)
	}
	// Reset keeps the limit and the role.
	r.Reset()
	if r.Charge(9) {
		t.Error("Reset dropped the limit")
	}
	r.Reset()
	r.Effect(abi.EffectNodeFail, nil)
	r.Pass(nil, nil)
	var vio *abi.Violation
	if _, err := r.Finish(); !errors.As(err, &vio) || vio.Kind != abi.ViolationEffectNotGranted {
		t.Errorf("Finish = %v, want effect_not_granted (Reset kept the manifest)", err)
	}
	// A result before Reset does not count after it.
	r.Reset()
	r.Success("one", nil)
	r.Reset()
	r.Success("two", nil)
	if v, err := r.Finish(); err != nil || v.Observation.Text != "two" {
		t.Errorf("Finish = %+v, %v; want the second call's result", v, err)
	}
}

func TestViolationText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind abi.ViolationKind
		zh   string
		en   string
	}{
		{abi.ViolationNoResult, "调用结束时没有给出结果", "the call ended without a result"},
		{abi.ViolationSecondResult, "一次调用给出了第二个结果", "a second result in one call"},
		{abi.ViolationMissingCode, "非成功结果缺少错误码", "a non-success result without an error code"},
		{abi.ViolationUnknownCode, "非成功结果的错误码未登记", "a non-success result with an unregistered error code"},
		{abi.ViolationMissingReason, "非成功结果缺少原因", "a non-success result without a reason"},
		{abi.ViolationMissingNext, "非成功结果缺少下一步", "a non-success result without a next step"},
		{abi.ViolationPassNotAllowed, "内置工具不能放行，必须给出结果", "a builtin cannot pass; it must give a result"},
		{abi.ViolationBadData, "结果数据不是合法 JSON", "result data is not valid JSON"},
		{abi.ViolationBadArgs, "改写后的参数不是 JSON 对象", "rewritten arguments are not a JSON object"},
		{abi.ViolationBadFacts, "来源记录不是合法的列表", "provenance facts are not a valid list"},
		{abi.ViolationUnknownEffect, "请求了未登记的效果", "an unregistered effect kind"},
		{abi.ViolationEffectNotGranted, "请求了未被授予的效果", "an effect the plugin was not granted"},
		{abi.ViolationCodeOutcome, "自声明错误码的结果类别与声明不符", "a declared error code with another outcome than declared"},
		{abi.ViolationOutputTooLarge, "输出超过上限", "output over the limit"},
		{abi.ViolationBadPointer, "传给宿主的内存地址越界", "a pointer passed to the host is out of bounds"},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			t.Parallel()
			v := &abi.Violation{Code: abi.PluginContractViolation, Kind: tt.kind}
			if got := v.Text(abi.LocaleZH); got != tt.zh {
				t.Errorf("Text(zh) = %q, want %q", got, tt.zh)
			}
			if got := v.Text(""); got != tt.zh {
				t.Errorf("Text(\"\") = %q, want %q", got, tt.zh)
			}
			if got := v.Text(abi.LocaleEN); got != tt.en {
				t.Errorf("Text(en) = %q, want %q", got, tt.en)
			}
			if got, want := v.Error(), "abi: plugin contract violation: "+tt.en; got != want {
				t.Errorf("Error() = %q, want %q", got, want)
			}
			v.Detail = "X"
			if got, want := v.Text(abi.LocaleZH), tt.zh+"：X"; got != want {
				t.Errorf("Text(zh) with detail = %q, want %q", got, want)
			}
			if got, want := v.Text(abi.LocaleEN), tt.en+": X"; got != want {
				t.Errorf("Text(en) with detail = %q, want %q", got, want)
			}
		})
	}
}

func TestViolationTextFromRecorder(t *testing.T) {
	t.Parallel()
	r := abi.NewRecorder(&builtinManifest, 0)
	r.Result(abi.OutcomeRejected, "NOPE", "r", "n", nil)
	_, err := r.Finish()
	var v *abi.Violation
	if !errors.As(err, &v) {
		t.Fatalf("Finish = %v", err)
	}
	if got, want := v.Text(abi.LocaleZH), "非成功结果的错误码未登记：NOPE"; got != want {
		t.Errorf("Text(zh) = %q, want %q", got, want)
	}
	if got, want := v.Text(abi.LocaleEN), "a non-success result with an unregistered error code: NOPE"; got != want {
		t.Errorf("Text(en) = %q, want %q", got, want)
	}
	if got, want := err.Error(), "abi: plugin contract violation: a non-success result with an unregistered error code: NOPE"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	// The host reports it with the violation's code.
	obs := abi.Failed(v.Code, abi.PluginContractViolation.Reason(abi.LocaleZH, "plugin", "b", "detail", v.Text(abi.LocaleZH)), abi.NextReportFailure.Text(abi.LocaleZH))
	if want := "插件 b 违反结果约定：非成功结果的错误码未登记：NOPE。下一步：调用 builtin_node_fail 说明该插件不可用"; obs.Message() != want {
		t.Errorf("Message() = %q, want %q", obs.Message(), want)
	}
}

// TestRecorderHostReservedCodes: a plugin cannot answer with a code only the
// host reports; every other registered code goes through.
func TestRecorderHostReservedCodes(t *testing.T) {
	t.Parallel()
	for _, info := range abi.Codes() {
		for _, form := range []string{string(info.Code), info.Wire} {
			t.Run(form, func(t *testing.T) {
				t.Parallel()
				r := abi.NewRecorder(&guardManifest, 0)
				r.Effect(abi.EffectLedgerReserve, []byte(`{}`))
				r.Result(abi.OutcomeRejected, form, "r", "n", nil)
				v, err := r.Finish()
				if !info.HostReserved {
					if err != nil || v.Observation == nil || v.Observation.Code != info.Code {
						t.Fatalf("Finish() = %+v, %v; want a REJECTED %s", v, err, info.Code)
					}
					return
				}
				var viol *abi.Violation
				if !errors.As(err, &viol) {
					t.Fatalf("Finish() = %+v, %v; want a violation", v, err)
				}
				want := abi.Violation{Code: abi.PluginContractViolation, Kind: abi.ViolationReservedCode, Detail: string(info.Code)}
				if *viol != want || len(v.Effects) != 0 {
					t.Fatalf("violation = %+v (effects %v), want %+v", *viol, v.Effects, want)
				}
				if got, want := viol.Error(), "abi: plugin contract violation: a non-success result with an error code only the host may report: "+string(info.Code); got != want {
					t.Fatalf("Error() = %q, want %q", got, want)
				}
			})
		}
	}
}
