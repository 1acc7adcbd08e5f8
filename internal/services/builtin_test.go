package services

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/tidwall/gjson"
)

func TestBuiltinMask(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, in, want string }{
		{"phone", "13812345678", "138****5678"},
		{"eight characters", "abcdefgh", "abc****efgh"},
		{"seven characters", "abcdefg", "****"},
		{"short", "12", "****"},
		{"empty", "", "****"},
		{"multi-byte", "张三丰李四王五赵六", "张三丰****王五赵六"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := builtinMask(tt.in); got != tt.want {
				t.Fatalf("mask(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestBuiltinCitations(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, in string
		want     []string
	}{
		{"none", "no citation", nil},
		{"two, one repeated", "a [ev:ev1] b [ev:ev-2] c [ev:ev1]", []string{"ev1", "ev-2"}},
		{"empty and spaced ids are not citations", "[ev:] [ev: x] [ev:x y]", nil},
		{"nested bracket", "[[ev:e3]]", []string{"e3"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := builtinCitations(tt.in); !slices.Equal(got, tt.want) {
				t.Fatalf("citations(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestBuiltinEchoesUser(t *testing.T) {
	t.Parallel()
	msgs := []string{"帮我创建一个叫春季促销的网站", "查订单"}
	for _, tt := range []struct {
		name, q string
		want    bool
	}{
		{"repeats the request", "您是要帮我创建一个叫春季促销的网站吗？", true},
		{"same words, other punctuation", "帮我 创建一个叫「春季促销」的网站", true},
		{"short message inside a real question", "查订单需要订单号，请提供订单号", false},
		{"message inside a long question", "帮我创建一个叫春季促销的网站需要先选空间，还需要域名和负责人，请提供", false},
		{"unrelated", "网站的域名是什么？", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := builtinEchoesUser(tt.q, msgs); got != tt.want {
				t.Fatalf("echoes(%q) = %v, want %v", tt.q, got, tt.want)
			}
		})
	}
}

func TestBuiltinVerbalConfirmation(t *testing.T) {
	t.Parallel()
	ct, err := builtinParseContract("k", json.RawMessage(`{"tools":{"create_site":{"label":"建站","sideEffect":"WRITE","success":{"path":"ok","op":"TRUTHY"}},"q":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	read, err := builtinParseContract("r", json.RawMessage(`{"tools":{"q":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name              string
		q                 string
		readOnly          bool
		gated, withFields bool
		want              bool
	}{
		{name: "names the tool label", q: "确认要建站吗？", want: true},
		{name: "names the tool", q: "Confirm create_site with these values?", want: true},
		{name: "write verb", q: "确定要创建这个网站吗", want: true},
		{name: "no confirmation phrase", q: "要创建的网站叫什么？"},
		{name: "asks for fields", q: "请确认要创建的网站名称", withFields: true},
		{name: "gated write makes any confirmation verbal", q: "请确认网站名称", gated: true, withFields: true, want: true},
		{name: "read-only skill", q: "确定要创建吗", readOnly: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := ct
			if tt.readOnly {
				c = read
			}
			if got := builtinVerbalConfirmation(tt.q, c, tt.gated, tt.withFields); got != tt.want {
				t.Fatalf("verbal(%q) = %v, want %v", tt.q, got, tt.want)
			}
		})
	}
}

func TestBuiltinPageBounds(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		in   string
		size int
		want [][2]int
	}{
		{"empty", "", 4, [][2]int{{0, 0}}},
		{"exact", "abcdefgh", 4, [][2]int{{0, 4}, {4, 8}}},
		{"rune moves to the next page", "abc证d", 4, [][2]int{{0, 3}, {3, 7}}},
		{"rune longer than a page", "证证", 2, [][2]int{{0, 3}, {3, 6}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := builtinPageBounds([]byte(tt.in), tt.size); !slices.Equal(got, tt.want) {
				t.Fatalf("pages = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBuiltinSameValue(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, a, b string
		want       bool
	}{
		{"number and its text", `200`, `"200"`, true},
		{"objects in another key order", `{"a":1,"b":[1,2]}`, `{"b":[1,2],"a":1}`, true},
		{"array and text", `[1]`, `"[1]"`, false},
		{"null and text", `null`, `"null"`, false},
		{"different", `"a"`, `"b"`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := builtinSameValue(gjson.Parse(tt.a), gjson.Parse(tt.b)); got != tt.want {
				t.Fatalf("same(%s, %s) = %v", tt.a, tt.b, got)
			}
		})
	}
}

func TestBuiltinApprovalDigest(t *testing.T) {
	t.Parallel()
	ct, err := builtinParseContract("k", json.RawMessage(`{"tools":{"w":{"sideEffect":"WRITE","success":{"path":"ok","op":"TRUTHY"},"args":{
		"buyer.taxNo":{"label":"税号","sensitive":true,"sources":["USER"]},
		"userId":{"from":"platform.userId"},
		"lines[].qty":{"label":"数量","sources":["USER"]},
		"meta":{"label":"附加","sources":["USER"]}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	args := `{"buyer":{"taxNo":"91310000ABCDEF1234","name":"甲"},"userId":7,"lines":[{"qty":1},{"qty":2,"sku":"x"}],"meta":{"b":1,"a":2},"none":null}`
	want := []string{"税号：913****1234", "buyer.name：甲", "数量[1]：1", "数量[2]：2", "lines[1].sku：x", `附加：{"a":2,"b":1}`}
	if got := builtinApprovalDigest(abi.LocaleZH, ct.Tool("w"), gjson.Parse(args)); !slices.Equal(got, want) {
		t.Fatalf("digest:\n got %q\nwant %q", got, want)
	}
}

// TestBuiltinServices runs the services by name, as the host does, on the
// edge requests the plugin tests do not reach.
func TestBuiltinServices(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, service, req, want string
	}{
		{"bad state view", "builtin.finish", `{"tool":"builtin_node_finish","state":{"state.node":[1]}}`,
			`{"outcome":"FAILED","code":"TOOL_ERROR","text":"工具 builtin_node_finish 发生未知错误：state.node: json: cannot unmarshal array into Go value of type abi.NodeView","next":"调用 builtin_node_fail 说明原因"}`},
		{"contract that does not load", "builtin.follow_up", `{"tool":"builtin_node_follow_up","locale":"en","args":{"question":"q"},"state":{"state.node":{"skillKey":"k","contract":{"mode":"LOOP"}}}}`,
			`{"outcome":"FAILED","code":"TOOL_ERROR","text":"tool builtin_node_follow_up failed with an unknown error: `},
		{"no node, no contract: empty contract", "builtin.output_set", `{"tool":"builtin_output_set","args":{"key":"a","value":"<b>","sourceType":"USER"},"state":{"state.node":{"nodeId":"n"},"state.conversation":{"userMessages":["<b>"]}}}`,
			`{"outcome":"REJECTED","code":"SOURCE_REJECT","text":"来源校验失败：产出 a 的值不在用户最近的消息中"`},
		{"approval without a gate", "builtin.approval", `{"tool":"builtin_node_approval"}`,
			`{"outcome":"REJECTED","code":"APPROVAL_NOT_GATED","text":"申请确认前没有被写入闸门拦下的写调用","next":"先直接调用写工具，被拦下后再按提示申请确认"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := Call(tt.service, []byte(tt.req), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(out), tt.want) {
				t.Fatalf("got  %s\nwant %s", out, tt.want)
			}
		})
	}
}
