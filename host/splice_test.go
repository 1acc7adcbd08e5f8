package host_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
)

// TestSpliceBounds hands the splice primitive one hostile input per bound
// (internal/testdata/guests/splicebomb) and checks the exact observation:
// a payload past the output limit is PLUGIN_OUTPUT_TOO_LARGE without being
// assembled whole, literal JSON that is not valid with the values in place
// is bad data, a path or parts the host does not take void the call; and
// the plugin's next call is served.
func TestSpliceBounds(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	pol := host.Policy{Capabilities: []abi.Capability{abi.CapEffectEvidence},
		Limits: abi.Limits{TimeoutMs: 2000, MemoryPages: 512, MaxOutputBytes: 64 << 10}}
	p := load(t, h, "splicebomb", pol)
	// the parts of longpath and parts pass a 64 KiB output limit first
	pol.Limits.MaxOutputBytes = 4 << 20
	wide := load(t, h, "splicebomb", pol)
	const bad = "插件 splicebomb@1.0.0 违反结果约定："
	big := `"` + strings.Repeat("b", 1<<10) + `"`
	tests := []struct {
		mode    string
		code    abi.Code
		message string
	}{
		// with a 64 KiB output limit
		{"amplify", abi.PluginOutputTooLarge, "插件 splicebomb@1.0.0 的输出超过 65536 字节。下一步：" + reportNext},
		{"instring", abi.PluginContractViolation, bad + "结果数据不是合法 JSON：entity.record: services: splice: payload is not valid JSON: a value inside a string。下一步：" + reportNext},
		{"dupkey", abi.PluginContractViolation, bad + "结果数据不是合法 JSON：entity.record: duplicate key \"a\" in $。下一步：" + reportNext},
		// with 4 MiB
		{"longpath", abi.PluginContractViolation, bad + "宿主函数拒绝了输入：services: path refused: 1048576 bytes, the limit is 512。下一步：" + reportNext},
		{"malformed", abi.PluginContractViolation, bad + "宿主函数拒绝了输入：services: splice refused: unknown part 'X' at byte 7。下一步：" + reportNext},
		{"cut", abi.PluginContractViolation, bad + "宿主函数拒绝了输入：services: splice refused: a part of 1073741824 bytes past the end。下一步：" + reportNext},
		{"parts", abi.PluginContractViolation, bad + "宿主函数拒绝了输入：services: splice refused: more than 10000 payloads。下一步：" + reportNext},
		{"modifiers", abi.PluginMemoryLimit, "插件 splicebomb@1.0.0 超出内存上限。下一步：调用 builtin_node_fail 说明该插件不可用"},
	}
	for _, tt := range tests {
		p := p
		if tt.mode == "longpath" || tt.mode == "parts" || tt.mode == "modifiers" {
			p = wide
		}
		v := p.Guard(context.Background(), "tenant-a", before(`{"mode":"`+tt.mode+`","big":`+big+`}`))
		if v.Pass || v.Observation == nil {
			t.Fatalf("%s: verdict %+v, want a rejection", tt.mode, v)
		}
		if o := v.Observation; o.Code != tt.code || o.Message() != tt.message {
			t.Errorf("%s: got %s %s\nwant %s %s", tt.mode, o.Code, o.Message(), tt.code, tt.message)
		}
	}
	v := p.Guard(context.Background(), "tenant-a", before(`{"mode":"none"}`))
	if !v.Pass || len(v.Effects) != 1 || v.Effects[0].Payload != nil {
		t.Fatalf("an empty splice: %+v, want a pass with one empty effect", v)
	}
}
