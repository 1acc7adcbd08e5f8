package envelope

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestToolMemo(t *testing.T) {
	t.Parallel()
	req := []byte(`{"contract":{"args":{"memoised":{"const":1}}}}`)
	a, err := Declared(Bytes(req))
	if err != nil || a == nil {
		t.Fatal(err)
	}
	b, _ := Declared(Bytes(`{"callId":"another call","contract":{"args":{"memoised":{"const":1}}}}`))
	if a != b {
		t.Fatal("the same contract text was parsed twice")
	}
	if n := Parsed(); n < 1 || n > MemoSize {
		t.Fatalf("memo holds %d contracts", n)
	}
}

func TestToolMemoBounded(t *testing.T) {
	t.Parallel()
	for i := range 3 * MemoSize {
		req := []byte(`{"tool":"t` + strings.Repeat("x", i) + `","contract":{"args":{"a":{"const":1}}}}`)
		if _, err := Tool(Bytes(req)); err != nil {
			t.Fatal(err)
		}
		if n := Parsed(); n > MemoSize {
			t.Fatalf("memo grew to %d contracts", n)
		}
	}
}

func TestDeclared(t *testing.T) {
	t.Parallel()
	for _, req := range []string{`{}`, `{"contract":null}`} {
		if tl, err := Declared(Bytes(req)); tl != nil || err != nil {
			t.Errorf("%s: got %v, %v", req, tl, err)
		}
	}
	tl, err := Tool(Bytes(`{"tool":"t"}`))
	if err != nil || tl.Name != "t" || tl.IsWrite() {
		t.Fatalf("unconfigured tool: %+v, %v", tl, err)
	}
}

func TestSame(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, a, b string
		want       bool
	}{
		{"number and its text", `200`, `"200"`, true},
		{"strings", `"a"`, `"a"`, true},
		{"different strings", `"a"`, `"b"`, false},
		{"objects in any key order", `{"a":1,"b":2}`, `{"b":2,"a":1}`, true},
		{"object and scalar", `{"a":1}`, `"{\"a\":1}"`, false},
		{"nulls are no value", `null`, `null`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Same(gjson.Parse(tt.a), gjson.Parse(tt.b)); got != tt.want {
				t.Fatalf("got %v", got)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	t.Parallel()
	const c = `"contract":{"success":{"path":"code","op":"EQ","value":0},"error":{"code":"err","message":"msg"}}`
	cases := []struct {
		name, req string
		ok        bool
		reason    string
	}{
		{"ok", `{"tool":"t",` + c + `,"response":{"code":0}}`, true, ""},
		{"no contract", `{"tool":"t","response":{"code":9}}`, true, ""},
		{"downstream code", `{"tool":"t",` + c + `,"response":{"code":1,"err":"system.50001","msg":"余额不足"}}`, false, "业务失败 [system.50001]：余额不足"},
		{"downstream code en", `{"tool":"t","locale":"en",` + c + `,"response":{"code":1,"err":"E1","msg":"no"}}`, false, "business failure [E1]: no"},
		{"no downstream code", `{"tool":"t",` + c + `,"response":{"code":1,"msg":"余额不足"}}`, false, "业务失败：余额不足"},
		{"empty response", `{"tool":"t",` + c + `}`, false, "业务失败：返回为空"},
		{"verify is ignored", `{"tool":"t","contract":{"sideEffect":"WRITE","success":{"path":"ok","op":"TRUTHY"},"verify":{"tool":"elsewhere"}},"response":{"ok":true}}`, true, ""},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ok, reason, err := Judge(Bytes(tt.req))
			if err != nil || ok != tt.ok || reason != tt.reason {
				t.Fatalf("got %v %q, %v; want %v %q", ok, reason, err, tt.ok, tt.reason)
			}
		})
	}
}

func TestJudgeInvalidContract(t *testing.T) {
	t.Parallel()
	_, _, err := Judge(Bytes(`{"tool":"t","contract":{"sideEffect":"WRITE"}}`))
	if err == nil || !strings.HasPrefix(err.Error(), `envelope: contract of tool "t": `) {
		t.Fatalf("err = %v", err)
	}
}
