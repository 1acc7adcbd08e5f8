package services_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/agentwarden/warden/internal/services"
)

// membersEnvelopes are envelopes the index must answer exactly as a scan
// of the whole envelope does: valid ones, and a few that are not, on which
// it happens to agree too for these paths.
var membersEnvelopes = []string{
	`{"abi":1,"kind":"guard","phase":"before","tool":"search","callId":"c1","locale":"en","provenance":{"a.b":"USER"},` +
		`"config":{"maxPayloadBytes":100},"result":{"outcome":"SUCCESS","code":""},"contract":{"args":{"spaceId":{"sources":["MODEL"]}},"sideEffect":"NONE"},` +
		`"schema":{"type":"object"},"bound":{"spaceId":42,"tags":["x","y"]},"args":{"spaceId":42.50,"tags":["x","y"],"q":"a{\"b\":1}"},` +
		`"state":{"state.evidence":{"items":[{"id":"ev_1","values":["42"]}]},"state.fingerprints":{"limit":3,"repeatTools":["search"]}},` +
		`"response":{"code":200,"data":{"records":[{"id":1},{"id":2}]}}}`,
	`{"tool":"a","tool":"b","args":{"x":1},"args":[1,2]}`, // duplicate keys: the first counts
	`{"args":1,"args":{"x":{"y":2}},"a":1,"a":{"b":2}}`,   // duplicate keys: a path may match a later one
	` { "tool" : "spaced" , "args" : [ 1 , { "x" : "y" } ] , "response" : "text{\"x\":1}" } `,
	`{"argsText":"not json {","tool":"t"}`,
	`{}`,
	`[1,2,{"args":1}]`,
	`"args"`,
	``,
	`{"args":{"a":1}`, // truncated
	`{"args":{"a":1}}}garbage`,
	`{"a-b":{"c_d":[true,false,null]},"1":{"2":3}}`,
}

var membersPaths = []string{
	"tool", "args", "args.spaceId", "args.tags", "args.tags.1", "args.tags.#", "args.@keys", "args.q", "args.q.b",
	"bound", "response", "response.data.records.#.id", "response.data.records.#(id==2).id", "response.x",
	"state.state\\.evidence.items", "state.state\\.fingerprints.repeatTools.#(==\"search\")", "state.*",
	"config.maxPayloadBytes", "result.outcome", "contract.args", "contract.sideEffect", "missing", "missing.x",
	"tool.x", "argsText", "argsText.x", "args|@keys", "@this", "#", "0", "args.", ".args", "a-b.c_d.2", "1.2",
	"{tool,args}", "[tool,args]", "ar*", "ar?s", "args\\.x", "provenance.a\\.b", "args.@reverse", "args.tags|#",
	"response.1", "args.1.x", "abi", "kind", "args.x.y", "a.b", "a.b|!true", "a",
}

// TestMembersAnswersAsTheScan checks the index against gjson on the whole
// envelope, for every path and envelope above.
func TestMembersAnswersAsTheScan(t *testing.T) {
	t.Parallel()
	var m services.Members
	for _, env := range membersEnvelopes {
		m.Reset([]byte(env))
		for _, path := range membersPaths {
			assertSameAnswer(t, &m, env, path)
		}
	}
}

func assertSameAnswer(t *testing.T, m *services.Members, env, path string) {
	t.Helper()
	want, werr := services.Query([]byte(env), path)
	got, gerr := m.Query(path)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%q on %q: error %v, the scan's %v", path, env, gerr, werr)
	}
	if got.Raw != want.Raw || got.Type != want.Type || got.Str != want.Str || got.Num != want.Num || got.Exists() != want.Exists() {
		t.Fatalf("%q on %q: %#v, the scan answers %#v", path, env, got, want)
	}
}

func FuzzMembers(f *testing.F) {
	for _, env := range membersEnvelopes {
		for _, path := range membersPaths[:8] {
			f.Add(env, path)
		}
	}
	f.Fuzz(func(t *testing.T, env, path string) {
		if !gjson.Valid(env) {
			t.Skip("the host's envelopes are valid JSON")
		}
		var m services.Members
		m.Reset([]byte(env))
		assertSameAnswer(t, &m, env, path)
		assertSameAnswer(t, &m, env, path) // built once, asked again
	})
}

// TestMembersSharedAnswersAsTheScan: an index given its common members by
// reference (AddShared) and the rest by Add and AddView answers as the
// scan, and the shared members' firmness is what Stable says.
func TestMembersSharedAnswersAsTheScan(t *testing.T) {
	t.Parallel()
	env := membersEnvelopes[0]
	var shared []services.Member
	var m services.Members
	m.SetParts([]byte(env))
	gjson.Parse(env).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "config", "response":
			m.Add(k.Str, v, false)
		case "state":
			v.ForEach(func(view, x gjson.Result) bool {
				m.AddView(view.Str, x)
				return true
			})
		default:
			shared = append(shared, services.Member{Key: k.Str, V: v, Firm: k.Str == "args"})
		}
		return true
	})
	m.AddShared(shared)
	for _, path := range membersPaths {
		assertSameAnswer(t, &m, env, path)
	}
	// A literal answers bytes of the path, which its caller reuses: never
	// stable, or a memo keeping it would see them change (a validation
	// found valid for other bytes). What gjson allocates (a count's
	// answer) nothing rewrites; a path the index does not cover (a
	// modifier, a multipath) is scanned on the envelope and not stable.
	for path, firm := range map[string]bool{"args.tags": true, "bound": false, "tool": false, "config": false, "state.state\\.evidence": true,
		"args|@reverse": false, "args.tags.#": true, "args.[tags,tags]": false, "args.zz|!true": false, `args.zz|!{"type":"object"}`: false,
		"state.state\\.evidence|@reverse": false, "state.state\\.evidence|!1": false, "bound|!1": false} {
		if _, err := m.Query(path); err != nil || m.Stable() != firm {
			t.Errorf("%s: Stable %v, want %v (%v)", path, m.Stable(), firm, err)
		}
	}
	m.SetParts([]byte(`{"tool":"x"}`))
	m.Add("tool", gjson.Parse(`"x"`), false)
	if got, _ := m.Query("args"); got.Exists() {
		t.Errorf("SetParts kept the shared members: args = %s", got.Raw)
	}
}

// TestMembersMemo: answers into a large member are kept for the call and
// asked again in any order, past the memo's room, and a Reset forgets
// them: each answer is still the scan's, and Stable follows the member.
func TestMembersMemo(t *testing.T) {
	t.Parallel()
	big := func(tag string) string {
		recs := make([]string, 0, 40)
		for i := range 40 {
			recs = append(recs, `{"id":`+string(rune('0'+i%10))+`,"tag":"`+tag+`"}`)
		}
		return `{"tool":"t","response":{"code":200,"data":{"records":[` + strings.Join(recs, ",") + `],"total":40}},"args":{"q":"` + tag + `"}}`
	}
	paths := []string{"response.data.records", "response.code", "response.data.total", "response.data.records.3.tag",
		"response.data.records.#", "response.data", "response.data.records.#.tag", "response.data.records|!1", "response.missing"}
	var m services.Members
	for _, tag := range []string{"first", "second"} {
		env := big(tag)
		m.Reset([]byte(env))
		for range 3 {
			for _, path := range paths {
				assertSameAnswer(t, &m, env, path)
			}
			slices.Reverse(paths)
		}
	}
	var firm services.Members
	env := big("firm")
	firm.SetParts([]byte(env))
	firm.Add("response", gjson.Get(env, "response"), true)
	for range 2 {
		for path, stable := range map[string]bool{"response.data.records": true, "response.data.records|!1": false} {
			if _, err := firm.Query(path); err != nil || firm.Stable() != stable {
				t.Errorf("%s: Stable %v, want %v (%v)", path, firm.Stable(), stable, err)
			}
		}
	}
}
