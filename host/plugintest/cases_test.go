package plugintest_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host/plugintest"
)

const casesYAML = `# the domain guard's cases
config: {blocked: [evil.org]}
cases:
  - name: allowed
    tool: create_website
    args: {domain: spring.example.com}
    contract: {sideEffect: WRITE, success: {path: code, op: EQ, value: 200}}
    want: pass
  - name: blocked
    tool: create_website
    phase: before
    args: {domain: evil.org}
    locale: en
    want: REJECTED ARG_REJECTED
  - name: after the write
    tool: create_website
    phase: after
    response: {code: 200}
    want: any
`

func TestPluginParseCases(t *testing.T) {
	t.Parallel()
	cf, err := plugintest.ParseCases([]byte(casesYAML))
	if err != nil {
		t.Fatal(err)
	}
	if string(cf.Config) != `{"blocked":["evil.org"]}` || len(cf.Cases) != 3 {
		t.Fatalf("config %s, %d cases", cf.Config, len(cf.Cases))
	}
	c := cf.Cases[0]
	if c.Name != "allowed" || c.Request.Tool != "create_website" || c.Request.Phase != "" || string(c.Request.Args) != `{"domain":"spring.example.com"}` ||
		string(c.Request.Contract) != `{"sideEffect":"WRITE","success":{"op":"EQ","path":"code","value":200}}` || c.Want != plugintest.WantPass() {
		t.Errorf("case 0: %+v", c)
	}
	if c := cf.Cases[1]; c.Request.Phase != abi.PhaseBefore || c.Request.Locale != abi.LocaleEN || c.Want != plugintest.WantOutcome(abi.OutcomeRejected, abi.ArgRejected) {
		t.Errorf("case 1: %+v", c)
	}
	// After the call, the result is a success carrying the response.
	if c := cf.Cases[2]; c.Want != (plugintest.Want{}) || c.Request.Result == nil || c.Request.Result.Outcome != abi.OutcomeSuccess ||
		string(c.Request.Result.Data) != `{"code":200}` || string(c.Request.Response) != `{"code":200}` || string(c.Request.Args) != `{}` {
		t.Errorf("case 2: %+v", c)
	}
}

// TestPluginParseCasesJSON: a JSON file reaches the plugin byte for byte.
func TestPluginParseCasesJSON(t *testing.T) {
	t.Parallel()
	const args = `{"z":1.50,"a":1e2,"n":12345678901234567890}`
	path := filepath.Join(t.TempDir(), "cases.json")
	if err := os.WriteFile(path, []byte(`{"cases":[{"name":"exact","tool":"pay","args":`+args+`,"want":"DEFERRED APPROVAL_REQUIRED"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cf, err := plugintest.LoadCases(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(cf.Cases[0].Request.Args); got != args {
		t.Errorf("args %s, want %s", got, args)
	}
	if w := cf.Cases[0].Want; w != plugintest.WantOutcome(abi.OutcomeDeferred, abi.ApprovalRequired) {
		t.Errorf("want %v", w)
	}
}

// TestPluginParseCasesErrors: every mistake is refused, naming the case.
func TestPluginParseCasesErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, file, want string }{
		{"empty", ``, "invalid cases file: no cases"},
		{"unknown key", "cases:\n- name: a\n  tool: t\n  want: pass\n  expect: pass\n", `unknown field "expect"`},
		{"unknown top key", `{"cases":[],"extra":1}`, `unknown field "extra"`},
		{"no name", "cases:\n- tool: t\n  want: pass\n", "invalid cases file: case #1: no name"},
		{"twice", "cases:\n- {name: a, tool: t, want: pass}\n- {name: a, tool: t, want: pass}\n", "invalid cases file: case a: a second case of this name"},
		{"no tool", "cases:\n- {name: a, want: pass}\n", "invalid cases file: case a: no tool"},
		{"phase", "cases:\n- {name: a, tool: t, phase: during, want: pass}\n", `invalid cases file: case a: phase "during": want before or after`},
		{"locale", "cases:\n- {name: a, tool: t, locale: fr, want: pass}\n", `invalid cases file: case a: locale "fr": want zh-CN or en`},
		{"no want", "cases:\n- {name: a, tool: t}\n", `invalid cases file: case a: no want: give "pass", "any", an outcome, or an outcome and a code`},
		{"bad outcome", "cases:\n- {name: a, tool: t, want: DENIED}\n", `invalid cases file: case a: want "DENIED": "DENIED" is not pass, any or an outcome (SUCCESS, FAILED, REJECTED, DEFERRED)`},
		{"not a code", "cases:\n- {name: a, tool: t, want: REJECTED domain_blocked}\n",
			`invalid cases file: case a: want "REJECTED domain_blocked": "domain_blocked" is neither a registered code nor a code name a plugin may declare`},
		{"success code", "cases:\n- {name: a, tool: t, want: SUCCESS ARG_REJECTED}\n", `invalid cases file: case a: want "SUCCESS ARG_REJECTED": a SUCCESS has no code`},
		{"response before", "cases:\n- {name: a, tool: t, response: {}, want: pass}\n", "invalid cases file: case a: result and response are for the after phase"},
		{"bad result", "cases:\n- {name: a, tool: t, phase: after, result: {outcome: FAILED, text: x}, want: pass}\n", "invalid cases file: case a: result: abi: FAILED observation: non-success observation without an error code"},
		{"config not object", "config: [1]\ncases:\n- {name: a, tool: t, want: pass}\n", "invalid cases file: config must be an object"},
		{"json trailer", `{"cases":[{"name":"a","tool":"t","want":"pass"}]} {}`, "invalid cases file: text after the JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := plugintest.ParseCases([]byte(tt.file))
			if !errors.Is(err, plugintest.ErrCases) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrCases with %q", err, tt.want)
			}
		})
	}
}

// FuzzParseCases: no input makes the parser panic, and what it accepts
// encodes as requests.
func FuzzParseCases(f *testing.F) {
	f.Add([]byte(casesYAML))
	f.Add([]byte(`{"cases":[{"name":"a","tool":"t","args":[1],"want":"REJECTED ARG_REJECTED"}]}`))
	f.Add([]byte("cases:\n- {name: a, tool: t, phase: after, result: {outcome: SUCCESS, text: ok}, want: any}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cf, err := plugintest.ParseCases(b)
		if err != nil {
			return
		}
		for _, c := range cf.Cases {
			if _, err := json.Marshal(c.Request); err != nil {
				t.Fatalf("case %s does not encode: %v", c.Name, err)
			}
		}
	})
}
