package responsecontract_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
)

const (
	tool       = "pay_invoice"
	withError  = `{"success":{"path":"code","op":"EQ","value":"0"},"error":{"code":"errCode","message":"errMsg"}}`
	noError    = `{"success":{"path":"code","op":"EQ","value":"0"}}`
	truthy     = `{"success":{"path":"data.ok","op":"TRUTHY"},"error":{"code":"errCode","message":"errMsg"}}`
	outSchema  = `{"type":"object","required":["code","data"],"properties":{"code":{"type":"string"},"data":{"type":"object","required":["id"],"properties":{"id":{"type":"integer"}}}}}`
	refSchema  = `{"$defs":{"User":{"type":"object","properties":{"mail":{"type":"string","format":"email"}}}},"type":"object","properties":{"data":{"type":"object","properties":{"id":{"type":"integer"},"owner":{"anyOf":[{"$ref":"#/$defs/User"},{"type":"null"}]}}}}}`
	nextBiz    = "根据失败原因修正参数后再调用，或用 builtin_node_follow_up 向用户说明并询问；无法继续时调用 builtin_node_fail"
	nextChange = "换一种做法：修改参数、改用其它工具，或根据已有结果调用 builtin_node_finish / builtin_node_fail"
)

type in struct {
	contract, response, schema string
	result                     *abi.Observation
	locale                     abi.Locale
}

func (r in) request() []byte {
	result := r.result
	if result == nil {
		ok := abi.Success("pay_invoice 调用成功", json.RawMessage(r.response))
		if r.response == "" {
			ok.Data = nil
		}
		result = &ok
	}
	req := abi.Request{ABI: abi.Version, Kind: abi.RoleGuard, Phase: abi.PhaseAfter, Tool: tool, CallID: "c1",
		Args: json.RawMessage(`{"invoice":"INV-1"}`), Contract: json.RawMessage(r.contract), Result: result, Locale: r.locale}
	if r.response != "" {
		req.Response = json.RawMessage(r.response)
	}
	if r.schema != "" {
		req.OutputSchema = json.RawMessage(r.schema)
	}
	b, err := json.Marshal(req)
	if err != nil {
		panic(err)
	}
	return b
}

// TestResponseContract has one row per rule of CONTRACT_SPEC §6.1/§6.2, per
// ResponseContract row of TOOL_OBSERVATION §5 (and scenario 12 of §9), and
// per output-schema check of TOOL_USE_RELIABILITY §2.3. Every row runs
// natively and as wasm with identical verdicts.
func TestResponseContract(t *testing.T) {
	t.Parallel()
	timeout := abi.Failed(abi.ToolTimeout, "工具 pay_invoice 在 30s 内没有返回", abi.NextTimeout.Text(""))
	long := `{"code":"9","blob":"` + strings.Repeat("x", 600) + `"}`
	cases := []struct {
		name string
		in   in
		want string
		data string // the FAILED observation's data; "" = none
	}{
		{"failed result passes unchanged", in{contract: withError, result: &timeout}, "PASS", ""},
		{"no success configured is ok", in{contract: `{}`, response: `{"code":"500"}`}, "PASS", ""},
		{"no contract is ok", in{response: `{"code":"500"}`}, "PASS", ""},
		{"success holds", in{contract: withError, response: `{"code":0,"data":{"id":1}}`}, "PASS", ""},
		{"downstream code goes into the reason", in{contract: withError, response: `{"code":"50001","errCode":"system.50001","errMsg":"余额不足"}`},
			"FAILED TOOL_BUSINESS_FAILED: 业务失败 [system.50001]：余额不足。下一步：" + nextBiz, `{"code":"50001","errCode":"system.50001","errMsg":"余额不足"}`},
		{"downstream code en", in{contract: withError, response: `{"code":"1","errCode":"system.50001","errMsg":"insufficient balance"}`, locale: abi.LocaleEN},
			"FAILED TOOL_BUSINESS_FAILED: business failure [system.50001]: insufficient balance. Next: fix the arguments according to the failure and call again, or explain to the user with builtin_node_follow_up; call builtin_node_fail if you cannot go on",
			`{"code":"1","errCode":"system.50001","errMsg":"insufficient balance"}`},
		{"no error.code configured", in{contract: noError, response: `{"code":"1","errMsg":"余额不足"}`},
			"FAILED TOOL_BUSINESS_FAILED: 业务失败：{\"code\":\"1\",\"errMsg\":\"余额不足\"}。下一步：" + nextBiz, `{"code":"1","errMsg":"余额不足"}`},
		{"error.code not found", in{contract: withError, response: `{"code":"1","errMsg":"余额不足"}`},
			"FAILED TOOL_BUSINESS_FAILED: 业务失败：余额不足。下一步：" + nextBiz, `{"code":"1","errMsg":"余额不足"}`},
		{"message falls back to the truncated response", in{contract: withError, response: long},
			"FAILED TOOL_BUSINESS_FAILED: 业务失败：" + long[:512] + "…。下一步：" + nextBiz, long},
		{"empty response fails a configured success", in{contract: withError},
			"FAILED TOOL_BUSINESS_FAILED: 业务失败：返回为空。下一步：" + nextBiz, ""},
		{"null response fails a configured success", in{contract: withError, response: `null`},
			"FAILED TOOL_BUSINESS_FAILED: 业务失败：null。下一步：" + nextBiz, "null"},
		{"numeric EQ compares numbers", in{contract: withError, response: `{"code":0.0}`}, "PASS", ""},
		{"truthy fails on false", in{contract: truthy, response: `{"data":{"ok":false},"errCode":"cms.1","errMsg":"未生效"}`},
			"FAILED TOOL_BUSINESS_FAILED: 业务失败 [cms.1]：未生效。下一步：" + nextBiz, `{"data":{"ok":false},"errCode":"cms.1","errMsg":"未生效"}`},

		// Output schema (TOOL_USE_RELIABILITY §2.1, §2.3).
		{"output matches its schema", in{contract: withError, response: `{"code":"0","data":{"id":5}}`, schema: outSchema}, "PASS", ""},
		{"output schema mismatch names each field", in{contract: withError, response: `{"code":"0","data":{"id":"5"}}`, schema: outSchema},
			"FAILED OUTPUT_SCHEMA_MISMATCH: 工具 pay_invoice 的返回不符合其输出定义：data.id: expected integer, got string。下一步：" + nextChange, `{"code":"0","data":{"id":"5"}}`},
		{"output schema several fields en", in{contract: `{}`, response: `{"code":0}`, schema: outSchema, locale: abi.LocaleEN},
			"FAILED OUTPUT_SCHEMA_MISMATCH: the response of tool pay_invoice does not match its output schema: code: expected string, got number; data: required property is missing. Next: change strategy: other arguments, another tool, or finish or fail with what you have",
			`{"code":0}`},
		{"business failure is reported before the schema", in{contract: withError, response: `{"code":"7","errCode":"E7","errMsg":"bad"}`, schema: outSchema},
			"FAILED TOOL_BUSINESS_FAILED: 业务失败 [E7]：bad。下一步：" + nextBiz, `{"code":"7","errCode":"E7","errMsg":"bad"}`},
		{"invalid output schema passes", in{contract: `{}`, response: `{"code":0}`, schema: `{"type":"bogus"}`}, "PASS", ""},
		{"output schema with $defs and anyOf null", in{contract: `{}`, response: `{"code":"0","data":{"id":5,"owner":{"mail":"a@"}}}`, schema: refSchema},
			"FAILED OUTPUT_SCHEMA_MISMATCH: 工具 pay_invoice 的返回不符合其输出定义：data.owner.mail: \"a@\" is not a valid email。下一步：" + nextChange,
			`{"code":"0","data":{"id":5,"owner":{"mail":"a@"}}}`},
		{"output schema with $defs holds", in{contract: `{}`, response: `{"code":"0","data":{"id":5,"owner":null}}`, schema: refSchema}, "PASS", ""},
		{"output schema with a remote $ref passes", in{contract: `{}`, response: `{"code":0}`, schema: `{"$ref":"https://example.com/out.json"}`}, "PASS", ""},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := both(t, tt.in.request())
			if got := describe(v, tt.in.locale); got != tt.want {
				t.Errorf("verdict:\n got %s\nwant %s", got, tt.want)
			}
			if len(v.Effects) != 0 {
				t.Errorf("effects = %v, want none", v.Effects)
			}
			if v.Observation != nil && string(v.Observation.Data) != tt.data {
				t.Errorf("data = %s, want %s", v.Observation.Data, tt.data)
			}
		})
	}
}
