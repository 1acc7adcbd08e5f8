package envelope

import (
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/contract"
	"github.com/tidwall/gjson"
)

// The guards' Call is a Hasher, so their contract memo goes by digest.
var _ Hasher = (*guest.Call)(nil)

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

// hashBytes is Bytes with the hash primitive, as guest.Call has it, and
// counts the contract reads that copy its text.
type hashBytes struct {
	Bytes
	reads *int
}

func (h hashBytes) Get(path string) gjson.Result {
	if path == "contract" {
		*h.reads++
	}
	return h.Bytes.Get(path)
}

func (h hashBytes) Hash(path string) ([32]byte, bool) {
	r := h.Bytes.Get(path)
	if !r.Exists() {
		return [32]byte{}, false
	}
	return sha256.Sum256([]byte(r.Raw)), true
}

// Through a Hasher, Declared and Tool answer what they answer on the text,
// and read a contract's text only the first time its digest is seen.
func TestHashedMemo(t *testing.T) {
	t.Parallel()
	for _, req := range []string{
		`{}`, `{"contract":null}`, `{"tool":"h1","contract":null}`, `{"tool":"h2","contract":"text"}`,
		`{"tool":"h3","contract":{"sideEffect":"WRITE","success":{"path":"ok","op":"TRUTHY"}}}`,
		`{"tool":"h4","contract":{"args":{"a":{"const":1}}}}`,
		`{"tool":"h5","contract":{"sideEffect":"WRITE"}}`, // invalid: a WRITE without success
	} {
		reads := 0
		h := hashBytes{Bytes(req), &reads}
		for range 3 {
			for _, declared := range []bool{true, false} {
				var got, want *contract.Tool
				var gerr, werr error
				if declared {
					got, gerr = Declared(h)
					want, werr = Declared(Bytes(req))
				} else {
					got, gerr = Tool(h)
					want, werr = Tool(Bytes(req))
				}
				if (gerr == nil) != (werr == nil) || (got == nil) != (want == nil) ||
					(got != nil && (got.Name != want.Name || got.SideEffect != want.SideEffect || len(got.Args) != len(want.Args))) {
					t.Fatalf("%s (declared %v): hashed %+v, %v; by text %+v, %v", req, declared, got, gerr, want, werr)
				}
			}
		}
		if strings.Contains(req, "h5") {
			continue // an invalid contract is read again every time: errors are not kept
		}
		if reads > 2 {
			t.Errorf("%s: the contract's text was read %d times over 6 calls", req, reads)
		}
	}
}

// Judge reads only the success path's value when it can; its verdict is
// contract.Tool.Judge's on the whole response in every case.
func TestJudgeByPathAgrees(t *testing.T) {
	t.Parallel()
	successes := []string{
		`{"path":"code","op":"EQ","value":200}`, `{"path":"code","op":"NE","value":200}`,
		`{"path":"code","op":"IN","value":[0,200]}`, `{"path":"code","op":"NOT_IN","value":[200]}`,
		`{"path":"data.ok","op":"TRUTHY"}`, `{"path":"data.ok","op":"EXISTS"}`, `{"path":"list.1","op":"EQ","value":"b"}`,
		`{"path":"code","op":"EQ","value":null}`, `{"path":"","op":"TRUTHY"}`, `{"path":"code"}`,
		`{"path":"a.b\\.c","op":"EQ","value":1}`, `{"path":"x-y_z","op":"EQ","value":"200"}`, `{"path":"data..ok","op":"TRUTHY"}`,
	}
	responses := []string{``, `null`, `{}`, `{"code":200}`, `{"code":"200"}`, `{"code":0}`, `{"code":null}`,
		`{"data":{"ok":true}}`, `{"data":{"ok":0}}`, `{"data":{"ok":null}}`, `{"list":["a","b"]}`, `{"a":{"b.c":1}}`,
		`{"x-y_z":200}`, `[1,2]`, `"text"`, `{"code":200,"code":1}`}
	for _, s := range successes {
		tool, err := contract.ParseTool("t", []byte(`{"success":`+s+`}`))
		if err != nil {
			t.Fatal(err)
		}
		for _, resp := range responses {
			req := `{"tool":"t","contract":{"success":` + s + `}`
			if resp != "" {
				req += `,"response":` + resp
			}
			req += `}`
			ok, _, err := Judge(Bytes(req))
			if want := tool.Judge([]byte(resp)).OK; err != nil || ok != want {
				t.Errorf("success %s, response %s: Judge %v, %v; Tool.Judge %v", s, resp, ok, err, want)
			}
		}
	}
}
