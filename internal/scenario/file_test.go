package scenario

import (
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	const base = "user: hi\nskills: [{skill_key: k, contract: {tools: {}}, toolNames: []}]\nmodel: [{text: ok}]\n"
	tests := []struct {
		name    string
		src     string
		wantErr string
	}{
		{name: "minimal", src: base},
		{name: "pending needs nothing else", src: "pending: no loop support yet\n"},
		{name: "unknown key", src: base + "expekt: {}\n", wantErr: `invalid scenario: error unmarshaling JSON: while decoding JSON: json: unknown field "expekt"`},
		{name: "no skills", src: "user: hi\nmodel: []\n", wantErr: "invalid scenario: no skills"},
		{name: "no user", src: "skills: [{skill_key: k, contract: {}}]\n", wantErr: "invalid scenario: no user message"},
		{name: "bad locale", src: base + "locale: fr\n", wantErr: `invalid scenario: locale "fr": want zh or en`},
		{name: "platform identity", src: base + "platform: {userId: 10086, organName: 市场部}\n"},
		{name: "hidden platform field", src: base + "platform: {userId: 1, passportId: p-1}\n",
			wantErr: "invalid scenario: platform.passportId is a hidden field (platform.hidden: passportId, clientId, sessionType, adminUser, adminCompany): it never reaches a node"},
		{name: "unknown platform field", src: base + "platform: {tenant: acme}\n",
			wantErr: "invalid scenario: platform.tenant is not a platform field (open: userId, memberId, name, organId, organName, organType, deptPath)"},
		{name: "platform field without a value", src: base + "platform: {userId: null}\n", wantErr: "invalid scenario: platform.userId has no value"},
		{name: "unknown run skill", src: base + "skill: other\n", wantErr: `invalid scenario: skill "other" is not among the skills`},
		{name: "mcp twice", src: base + "tools: {mcp: {url: http://x, build: ./y}}\n", wantErr: "invalid scenario: tools.mcp: exactly one of build, command, url"},
		{name: "unknown fault", src: base + "tools: {scripted: [{name: t, faults: [{kind: slow}]}]}\n", wantErr: `invalid scenario: tool t: fault 1: unknown kind "slow"`},
		{name: "bad delay", src: base + "tools: {scripted: [{name: t, faults: [{kind: none, delay: soon}]}]}\n", wantErr: `invalid scenario: tool t: fault 1: time: invalid duration "soon"`},
		{name: "reply with two answers", src: base + "replies: [{answer: a, decision: CONFIRM}]\n", wantErr: "invalid scenario: reply 1: exactly one of answer, decision, verified"},
		{name: "unknown decision", src: base + "replies: [{decision: MAYBE}]\n", wantErr: `invalid scenario: reply 1: decision "MAYBE": want CONFIRM, REJECT or CANCEL`},
		{name: "bad verified", src: base + "replies: [{verified: perhaps}]\n", wantErr: `invalid scenario: reply 1: verified "perhaps": want yes or no`},
		{name: "bad after", src: base + "replies: [{decision: CONFIRM, after: 1d}]\n", wantErr: `invalid scenario: reply 1: time: unknown unit "d" in duration "1d"`},
		{name: "held_args without a decision", src: base + "replies: [{answer: a, held_args: {x: 1}}]\n", wantErr: "invalid scenario: reply 1: held_args goes with a decision"},
		{name: "seeded write without args", src: base + "state: {ledger: [{tool: w, state: STARTED}]}\n", wantErr: "invalid scenario: state.ledger[0]: tool and JSON args are required"},
		{name: "seeded write in a bad state", src: base + "state: {ledger: [{tool: w, args: {}, state: SUCCESS}]}\n", wantErr: `invalid scenario: state.ledger[0]: state "SUCCESS": want STARTED, UNKNOWN, UNKNOWN_PRE_CALL or FAILED`},
		{name: "seeded write of an unknown node", src: base + "state: {ledger: [{tool: w, args: {}, state: STARTED, node: later}]}\n", wantErr: `invalid scenario: state.ledger[0]: node "later": want self or earlier`},
		{name: "seeded evidence without id", src: base + "state: {evidence: [{tool: w}]}\n", wantErr: "invalid scenario: state.evidence[0]: an evidence item with id and tool is required"},
		{name: "negative delegation depth", src: base + "config: {delegate_max_depth: 0}\n", wantErr: "invalid scenario: config: delegate_max_depth 0: want 1 or more"},
		{name: "seeded state and state keys", src: base + "config: {write_confirm_bypass_tools: [w], reserved_keys: [_p], delegate_max_depth: 1}\nstate: {ledger: [{tool: w, args: {a: 1}, state: UNKNOWN, node: earlier}], scratch: {k: 1}}\n"},
		{name: "load refusal of an unknown skill", src: base + "expect: {load: [{skill: other, rule: \"6\"}]}\n", wantErr: "invalid scenario: expect.load[0]: a skill of the scenario and a rule are required"},
		{name: "load refusal without a rule", src: base + "expect: {load: [{skill: k}]}\n", wantErr: "invalid scenario: expect.load[0]: a skill of the scenario and a rule are required"},
		{name: "task with seeded state", src: base + "task: {}\nstate: {scratch: {k: 1}}\n", wantErr: "invalid scenario: task: state.ledger, state.evidence, state.scratch and skill are for one-node scenarios"},
		{name: "seeded share in a bad scope", src: base + "state: {shared: {k: {value: 1, share: NODE}}}\n", wantErr: `invalid scenario: state.shared.k: share "NODE": want TASK or SESSION`},
		{name: "seeded share without a scope", src: base + "state: {shared: {k: {value: 1}}}\n", wantErr: `invalid scenario: state.shared.k: share "": want TASK or SESSION`},
		{name: "seeded share without a value", src: base + "state: {shared: {k: {share: TASK}}}\n", wantErr: "invalid scenario: state.shared.k: a JSON value is required"},
		{name: "seeded share with an unknown key", src: base + "state: {shared: {k: {value: 1, scope: TASK}}}\n", wantErr: `invalid scenario: error unmarshaling JSON: while decoding JSON: json: unknown field "scope"`},
		{name: "unknown seed", src: base + "state: {session: {k: 1}}\n", wantErr: `invalid scenario: error unmarshaling JSON: while decoding JSON: json: unknown field "session"`},
		{name: "task with a seeded TASK share", src: base + "task: {}\nstate: {shared: {k: {value: 1, share: TASK}}}\n", wantErr: "invalid scenario: task: state.shared.k: share TASK is for one-node scenarios (a task's values start empty): want SESSION"},
		{name: "task with seeded session values and entities", src: base + "task: {}\nstate: {shared: {k: {value: 1, share: SESSION}}, entities: [{type: space, id: \"1\"}]}\n"},
		{name: "seeded entity with a number id", src: base + "task: {}\nstate: {entities: [{type: space, id: 42, name: 市场部}]}\n"},
		{name: "seeded entity with an object id", src: base + "task: {}\nstate: {entities: [{type: space, id: {x: 1}}]}\n", wantErr: `invalid scenario: state.entities[0]: id {"x":1}: a string, a number or a boolean`},
		{name: "seeded entity without a type", src: base + "state: {entities: [{id: \"1\"}]}\n", wantErr: "invalid scenario: state.entities[0]: type and id are required"},
		{name: "seeded entity without an id", src: base + "state: {entities: [{type: space}]}\n", wantErr: "invalid scenario: state.entities[0]: type and id are required"},
		{name: "one node with seeded shares", src: base + "state: {shared: {a: {value: 1, share: TASK}, b: {value: [x], share: SESSION}}}\n"},
		{name: "graph without a task", src: base + "expect: {graph: [{node: t1.n1}]}\n", wantErr: "invalid scenario: expect.graph: for task scenarios"},
		{name: "task", src: base + "task: {messages: [again], skills: [k]}\nexpect: {graph: [{node: t1.n1, skill: k, status: DONE}], suspensions: []}\n"},
		{name: "keyed turns", src: base + "task: {}\nmodels: {planner: [{text: \"{}\"}], k: [{text: ok}], t1.n1: [{text: ok}]}\n"},
		{name: "empty keyed turn", src: base + "models: {k: [{}]}\n", wantErr: "invalid scenario: models.k: model/scripted: invalid script: turn 1: no text, tool calls or failure"},
		{name: "empty models key", src: base + "models: {\"\": [{text: ok}]}\n", wantErr: "invalid scenario: models: an empty key"},
		{name: "plugins, short and long", src: base + "plugins: {domainguard@0.1.0: ./domainguard.wasm, acme.unitconv@1.2.0: {build: ./examples/builtins/unitconv/cmd, capabilities: [clock]}}\nexpect: {install: [{plugin: acme.unitconv@1.2.0}]}\n"},
		{name: "plugins by digest", src: base + "plugins: {\"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\": ./m.wasm}\n"},
		{name: "plugin key not a ref", src: base + "plugins: {DomainGuard: ./m.wasm}\n", wantErr: "invalid scenario: plugins.DomainGuard: want name@version or sha256:<64 lowercase hex>"},
		{name: "plugin with path and build", src: base + "plugins: {g@1.0.0: {path: ./m.wasm, build: ./cmd}}\n", wantErr: "invalid scenario: plugins.g@1.0.0: exactly one of path, build"},
		{name: "plugin without a module", src: base + "plugins: {g@1.0.0: {capabilities: [clock]}}\n", wantErr: "invalid scenario: plugins.g@1.0.0: exactly one of path, build"},
		{name: "plugin with an unknown key", src: base + "plugins: {g@1.0.0: {file: ./m.wasm}}\n", wantErr: `invalid scenario: error unmarshaling JSON: while decoding JSON: a path or {path|build, sha256, capabilities}: json: unknown field "file"`},
		{name: "install refusal of an unknown plugin", src: base + "expect: {install: [{plugin: g@1.0.0}]}\n", wantErr: `invalid scenario: expect.install[0]: "g@1.0.0" is not a key of plugins`},
		{name: "empty model turn", src: "user: hi\nskills: [{skill_key: k, contract: {}}]\nmodel: [{}]\n", wantErr: "invalid scenario: model/scripted: invalid script: turn 1: no text, tool calls or failure"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.src))
			got := ""
			if err != nil {
				got = err.Error()
				if !errors.Is(err, ErrInvalidScenario) {
					t.Errorf("not ErrInvalidScenario: %v", err)
				}
			}
			if got != tt.wantErr {
				t.Fatalf("Parse error = %q, want %q", got, tt.wantErr)
			}
		})
	}
}

// TestParseExact: what a scenario file gives the model, the tools and the
// expectations keeps its key order and every digit.
func TestParseExact(t *testing.T) {
	t.Parallel()
	src := "user: hi\nskills: [{skill_key: k, contract: {tools: {}}, toolNames: [t]}]\n" +
		"model: [{tool_calls: [{name: t, arguments: {z: 1, orderId: 1234567890123456789, total: 123456789012345678901234567890, one: 1.0, zero: -0, huge: 1e400, a: 2}}]}]\n" +
		"tools: {scripted: [{name: t, responses: [{code: 200, data: {id: 9007199254740993, b: 1, a: 2}}]}]}\n"
	s, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Model[0].ToolCalls[0].Arguments, `{"z":1,"orderId":1234567890123456789,"total":123456789012345678901234567890,"one":1.0,"zero":-0,"huge":1e400,"a":2}`; got != want {
		t.Errorf("arguments\n got %s\nwant %s", got, want)
	}
	if got, want := string(s.Tools.Scripted[0].Responses[0]), `{"code":200,"data":{"id":9007199254740993,"b":1,"a":2}}`; got != want {
		t.Errorf("response\n got %s\nwant %s", got, want)
	}
	if _, err := Parse([]byte(src + "user: again\n")); err == nil || !errors.Is(err, ErrInvalidScenario) {
		t.Errorf("a key written twice: %v", err)
	}
}
