package control

import (
	"encoding/json"
	"regexp"
	"slices"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/plugins/builtins/internal/rules"
	"github.com/tidwall/gjson"
)

func TestMask(t *testing.T) {
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
			if got := mask(tt.in); got != tt.want {
				t.Fatalf("mask(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestCitations(t *testing.T) {
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
			if got := citations(tt.in); !slices.Equal(got, tt.want) {
				t.Fatalf("citations(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestEchoesUser(t *testing.T) {
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
			if got := echoesUser(tt.q, msgs); got != tt.want {
				t.Fatalf("echoes(%q) = %v, want %v", tt.q, got, tt.want)
			}
		})
	}
}

func TestVerbalConfirmation(t *testing.T) {
	t.Parallel()
	ct, err := rules.Parse("k", json.RawMessage(`{"tools":{"create_site":{"label":"建站","sideEffect":"WRITE","success":{"path":"ok","op":"TRUTHY"}},"q":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	read, err := rules.Parse("r", json.RawMessage(`{"tools":{"q":{}}}`))
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
			if got := verbalConfirmation(tt.q, c, tt.gated, tt.withFields); got != tt.want {
				t.Fatalf("verbal(%q) = %v, want %v", tt.q, got, tt.want)
			}
		})
	}
}

func TestApprovalDigest(t *testing.T) {
	t.Parallel()
	ct, err := rules.Parse("k", json.RawMessage(`{"tools":{"w":{"sideEffect":"WRITE","success":{"path":"ok","op":"TRUTHY"},"args":{
		"buyer.taxNo":{"label":"税号","sensitive":true,"sources":["USER"]},
		"userId":{"from":"platform.userId"},
		"lines[].qty":{"label":"数量","sources":["USER"]},
		"meta":{"label":"附加","sources":["USER"]}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	args := `{"buyer":{"taxNo":"91310000ABCDEF1234","name":"甲"},"userId":7,"lines":[{"qty":1},{"qty":2,"sku":"x"}],"meta":{"b":1,"a":2},"none":null}`
	want := []abi.ArgLine{{Label: "税号", Value: "913****1234"}, {Label: "buyer.name", Value: "甲"}, {Label: "数量[1]", Value: "1"},
		{Label: "数量[2]", Value: "2"}, {Label: "lines[1].sku", Value: "x"}, {Label: "附加", Value: `{"a":2,"b":1}`}}
	if got := approvalDigest(ct.Tool("w"), gjson.Parse(args)); !slices.Equal(got, want) {
		t.Fatalf("digest:\n got %q\nwant %q", got, want)
	}
}

// TestServices runs the services by name, as the host does, on the
// edge requests the plugin tests do not reach.

// citationRE is the citation syntax as a regular expression, the oracle of
// the scanner in citations.
var citationRE = regexp.MustCompile(`\[ev:([^\]\s]+)\]`)

func FuzzCitations(f *testing.F) {
	for _, s := range []string{"", "[ev:a]", "[ev:a][ev:b] [ev:a]", "[[ev:e3]]", "[ev:[ev:x]]", "[ev:a\vb]", "[ev:\xff]",
		"[ev:a b] [ev:c]", "[ev:]", "[ev:x", "[ev:x\n]", "网站 [ev:证据1]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want []string
		for _, m := range citationRE.FindAllStringSubmatch(s, -1) {
			if !slices.Contains(want, m[1]) {
				want = append(want, m[1])
			}
		}
		if got := citations(s); !slices.Equal(got, want) {
			t.Fatalf("citations(%q) = %q, want %q", s, got, want)
		}
	})
}
