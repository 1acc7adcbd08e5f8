package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/store/sqlstore"
	"github.com/agentwarden/warden/internal/store/sqlstore/sqltest"
	"github.com/agentwarden/warden/internal/testdata"
)

// TestFleetSlots runs warden serve instances on one store: a WriteGate
// generation that also gates the read tool search_articles, installed on
// instance a, reaches instance b (which then suspends a search for
// approval), survives b's restart, and a rollback to generation 1 through
// b reaches a. A candidate both refuse reaches neither; the refusal is in
// the slot's answer on b. The slot's history counts each generation's
// served calls, across b's restart. A candidate only b refuses (its
// --plugin-max-instance-bytes is smaller than one instance of
// writegate-bigheap) is served by neither either: a held it ready and
// never served it, and the rollout names b and why. On SQLite one instance
// restarts.
func TestFleetSlots(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs warden and the example MCP server")
	}
	for _, tt := range []struct {
		name string
		d    sqlstore.Dialect
	}{{"postgres", sqlstore.Postgres}, {"sqlite", sqlstore.SQLite}} {
		t.Run(tt.name, func(t *testing.T) {
			var storeArg string
			if tt.d == sqlstore.Postgres {
				storeArg = "postgres:" + sqltest.DSN(t, sqlstore.Postgres) // skips without a PostgreSQL
			} else {
				storeArg = "sqlite:" + filepath.Join(t.TempDir(), "warden.db")
			}
			fleetSlots(t, storeArg, tt.d == sqlstore.Postgres)
		})
	}
}

func fleetSlots(t *testing.T, storeArg string, two bool) {
	warden := buildBin(t, "warden", ".")
	cmsBin := buildBin(t, "mcp-cms", "../../examples/mcp-cms")
	_, mcpURL := start(t, regexp.MustCompile(`listening on (http://\S+)`), cmsBin, "-http", "127.0.0.1:0")
	dir := t.TempDir()
	skills := filepath.Join(dir, "skills")
	if err := os.MkdirAll(skills, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"agent_profile.yaml":       "- {id: 1, agent_code: cms, agent_name: CMS, status: ACTIVE}\n",
		"agent_skill_binding.yaml": "- {agent_id: 1, skill_id: 30, enabled_flag: 1}\n",
		"skill_tool_binding.yaml":  "- {skill_id: 30, tool_name: search_articles, enabled_flag: 1}\n",
		"skill_profile.yaml": `- id: 30
  skill_key: cms.articles
  skill_name: Article search
  skill_manual: Search the articles.
  skill_contract:
    tools:
      search_articles:
        label: Search articles
        success: {path: code, op: EQ, value: 200}
  status: ACTIVE
`,
	} {
		writeFile(t, filepath.Join(skills, name), body)
	}
	keys := filepath.Join(dir, "keys.json")
	writeFile(t, keys, `{"tenants":[{"tenant":"acme","agent":"cms","keys":["`+tenantKey+`"]}],"admin_keys":["`+adminKey+`"]}`)
	script := filepath.Join(dir, "script.json")
	writeFile(t, script, `[
		{"tool_calls":[{"name":"search_articles","arguments":{"query":"autumn"}}]},
		{"tool_calls":[{"name":"builtin_node_finish","arguments":{"output":"searched"}}]}]`)
	var procs []*proc
	serving := regexp.MustCompile(`serving on (http://\S+)`)
	serve := func(name string) (*proc, string) {
		t.Helper()
		args := []string{"serve", "--addr", "127.0.0.1:0", "--skills", skills, "--keys", keys, "--store", storeArg,
			"--instance", name, "--lease", "2s", "--model", "scripted", "--model-script", script, "--tools", "mcp-url", "--mcp-url", mcpURL,
			"--plugin-cache", testdata.CacheDir(t), "--forward=false"}
		if two && name == "warden-b" {
			// A smaller instance: one instance of writegate-bigheap does
			// not fit its whole plugin instance budget.
			args = append(args, "--plugin-max-instance-bytes", "32MiB")
		}
		p, base := start(t, serving, warden, args...)
		procs = append(procs, p)
		return p, base
	}
	// decides runs a search on an instance and says what its TOOL event
	// says: SUCCESS under the first-party WriteGate; DEFERRED by the
	// WriteGate plugin and store generation that gates reads (the script
	// then runs out: the run fails, its trace stays).
	decides := func(base string) string {
		t.Helper()
		var sess struct{ ID string }
		if code := apiCall(t, base, "POST", "/v1/sessions", tenantKey, "", &sess); code != 201 {
			t.Fatalf("session: %d", code)
		}
		apiCall(t, base, "POST", "/v1/sessions/"+sess.ID+"/messages?wait=5m", tenantKey, `{"text":"search the articles about autumn"}`, nil)
		var trace struct {
			Events []struct {
				Kind, Tool, Outcome, Guard, Plugin string
				Generation                         uint64
			}
		}
		if code := apiCall(t, base, "GET", "/v1/sessions/"+sess.ID+"/tasks/t1/trace", tenantKey, "", &trace); code != 200 {
			t.Fatalf("trace: %d", code)
		}
		for _, e := range trace.Events {
			if e.Kind == "TOOL" && e.Tool == "search_articles" {
				if e.Guard == "" {
					return e.Outcome
				}
				return fmt.Sprintf("%s by %s %s generation %d", e.Outcome, e.Guard, e.Plugin, e.Generation)
			}
		}
		for _, p := range procs {
			t.Log(p.out.String())
		}
		t.Fatalf("no search_articles call: %+v", trace)
		return ""
	}
	type slotAnswer struct {
		Current     struct{ Digest string }
		Generations []struct{ Digest string }
		Serving     uint64
		Desired     struct{ Number uint64 }
		Refused     []struct{ Instance, Reason string }
		Rollout     struct {
			ID, State, By, Code, Reason string
			Done                        bool
			Pending                     []string
			Refused                     []struct{ Instance, Reason string }
		}
	}
	slot := func(base string) slotAnswer {
		t.Helper()
		var s slotAnswer
		if code := apiCall(t, base, "GET", "/admin/v1/slots/WriteGate", adminKey, "", &s); code != 200 {
			t.Fatalf("slot: %d", code)
		}
		return s
	}
	// follows waits until an instance serves store generation n: within
	// the poll period, plus the candidate's compile on a loaded machine.
	follows := func(base string, n uint64) {
		t.Helper()
		for deadline := time.Now().Add(3 * time.Minute); slot(base).Serving != n; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s does not serve generation %d: %+v", base, n, slot(base))
			}
		}
	}

	a, baseA := serve("warden-a")
	b, baseB := a, baseA
	if two {
		b, baseB = serve("warden-b")
	}
	if got := decides(baseB); got != "SUCCESS" {
		t.Fatalf("b before the install: %s", got)
	}
	module, _ := json.Marshal(map[string][]byte{"module": testdata.Bytes(t, "writegate-gatesread")})
	var put slotAnswer
	// ?wait= answers once every live instance serves it.
	if code := apiCall(t, baseA, "PUT", "/admin/v1/slots/WriteGate?wait=5m", adminKey, string(module), &put); code != 200 || put.Desired.Number != 2 ||
		put.Serving != 2 || !put.Rollout.Done || put.Rollout.ID != "WriteGate@2" {
		t.Fatalf("install on a: %d %+v", code, put)
	}
	if s := slot(baseB); s.Serving != 2 {
		t.Fatalf("b once the install on a answered: %+v", s)
	}
	const gated = "DEFERRED by WriteGate writegate@1.1.0 generation 2"
	if got := decides(baseB); got != gated {
		t.Fatalf("b after the install on a: %s", got)
	}

	// b restarts and serves generation 2 from its start.
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-b.done
	name := "warden-b"
	if !two {
		name = "warden-a"
	}
	b, baseB = serve(name)
	if !two {
		a, baseA = b, baseB
	}
	_ = a
	if s := slot(baseB); s.Serving != 2 {
		t.Fatalf("b after its restart: %+v", s)
	}
	if got := decides(baseB); got != gated {
		t.Fatalf("b after its restart: %s", got)
	}

	// Back to generation 1 through b; a follows.
	var back slotAnswer
	// Without ?wait= the answer comes once b has answered: 202 while a
	// has not prepared it, or not swapped to it, yet.
	code := apiCall(t, baseB, "POST", "/admin/v1/slots/WriteGate/rollback?to=1", adminKey, "", &back)
	if back.Rollout.ID != "WriteGate@3" || !(code == 200 && back.Rollout.Done && back.Desired.Number == 3 ||
		code == 202 && two && len(back.Rollout.Pending) == 1 && back.Rollout.Pending[0] == "warden-a") {
		t.Fatalf("rollback through b: %d %+v", code, back)
	}
	follows(baseA, 3)
	if got := decides(baseA); got != "SUCCESS" {
		t.Fatalf("a after the rollback through b: %s", got)
	}

	// A candidate every instance refuses (it asks for capabilities
	// WriteGate's slot does not allow) serves nowhere; b shows the
	// refusal.
	bad, _ := json.Marshal(map[string][]byte{"module": testdata.Bytes(t, "writegate-escalate")})
	if code := apiCall(t, baseA, "PUT", "/admin/v1/slots/WriteGate?wait=5m", adminKey, string(bad), nil); code != 403 {
		t.Fatalf("refused candidate on a: %d", code)
	}
	for _, base := range []string{baseA, baseB} {
		s := slot(base)
		if s.Serving != 3 || s.Desired.Number != 3 || len(s.Refused) == 0 || !strings.Contains(s.Refused[len(s.Refused)-1].Reason, "capabilities") ||
			s.Rollout.ID != "WriteGate@4" || s.Rollout.State != "refused" || s.Rollout.Code != "capability_not_granted" {
			t.Fatalf("after a refused candidate: %+v", s)
		}
	}
	if got := decides(baseB); got != "SUCCESS" {
		t.Fatalf("b after a refused candidate: %s", got)
	}

	// The store's history keeps each generation's served calls: the
	// retired generation 2 deferred b's two searches, one before b's
	// restart and one after; generation 1 passed b's first. The load
	// check's and self-tests' calls are counted apart.
	var hist struct {
		Kept []struct {
			Number uint64
			Counts *struct {
				Calls, Probes uint64
				Outcomes      map[string]uint64
				Instances     []string
			}
		}
	}
	if code := apiCall(t, baseB, "GET", "/admin/v1/slots/WriteGate", adminKey, "", &hist); code != 200 || len(hist.Kept) != 3 {
		t.Fatalf("history: %d %+v", code, hist)
	}
	g1, g2 := hist.Kept[0].Counts, hist.Kept[1].Counts
	if g1 == nil || g2 == nil || g1.Outcomes["pass"] == 0 || g1.Probes == 0 || g2.Outcomes["deferred"] < 2 || g2.Calls < 2 || g2.Probes == 0 ||
		!strings.Contains(strings.Join(g2.Instances, ","), name) {
		t.Fatalf("counts of generation 1 %+v, of 2 %+v", g1, g2)
	}
	if !two {
		return
	}

	// A candidate only b refuses, for its smaller instance budget: a held
	// it ready and serves it no more than b does; the rollout names b and
	// why.
	big, _ := json.Marshal(map[string][]byte{"module": testdata.Bytes(t, "writegate-bigheap")})
	var refusal struct {
		Error struct{ Code, Message string }
	}
	if code := apiCall(t, baseA, "PUT", "/admin/v1/slots/WriteGate?wait=5m", adminKey, string(big), &refusal); code != 422 ||
		refusal.Error.Code != "plugin_rejected" || !strings.HasPrefix(refusal.Error.Message, "WriteGate@5 refused by warden-b: ") ||
		!strings.Contains(refusal.Error.Message, "over this instance's whole plugin instance budget of 33554432 bytes") {
		t.Fatalf("a candidate b refuses: %d %+v", code, refusal)
	}
	bigDigest := host.Digest(testdata.Bytes(t, "writegate-bigheap"))
	for _, base := range []string{baseA, baseB} {
		s := slot(base)
		if s.Serving != 3 || s.Desired.Number != 3 || s.Rollout.ID != "WriteGate@5" || s.Rollout.State != "refused" || s.Rollout.By != "warden-b" ||
			len(s.Rollout.Refused) != 1 || s.Rollout.Refused[0].Instance != "warden-b" || !strings.Contains(s.Rollout.Reason, "instance budget") {
			t.Fatalf("after a candidate b refused: %+v", s)
		}
		for _, g := range s.Generations {
			if g.Digest == bigDigest {
				t.Fatalf("%s served the candidate b refused: %+v", base, s.Generations)
			}
		}
	}
	for _, base := range []string{baseA, baseB} {
		if got := decides(base); got != "SUCCESS" {
			t.Fatalf("%s after a candidate b refused: %s", base, got)
		}
	}
}
