package server_test

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/model"
	mscripted "github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/internal/scenario"
	"github.com/agentwarden/warden/internal/server"
	"github.com/agentwarden/warden/internal/skillstore"
	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/internal/tools"
	tscripted "github.com/agentwarden/warden/internal/tools/scripted"
	"github.com/agentwarden/warden/loop"
	"github.com/agentwarden/warden/plugins"
)

// pluginClock is the fixed time of the plugin fixtures: the server's clock
// and, through the host's Clock, the env builtin's.
var pluginClock = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

var firstParty struct {
	once    sync.Once
	modules map[string][]byte // by file name, "writegate.wasm"
	err     error
}

// firstPartyModules builds the ten first-party plugins once per test
// binary, as `make plugins` would.
func firstPartyModules(t *testing.T) map[string][]byte {
	t.Helper()
	firstParty.once.Do(func() {
		pkgs := map[string]string{}
		for _, p := range plugins.All {
			pkgs[p.File+".wasm"] = "./" + p.Main
		}
		firstParty.modules = map[string][]byte{}
		for file, pkg := range pkgs {
			path, err := testdata.Build(pkg)
			if err != nil {
				firstParty.err = err
				return
			}
			b, err := os.ReadFile(path)
			if err != nil {
				firstParty.err = err
				return
			}
			firstParty.modules[file] = b
		}
	})
	if firstParty.err != nil {
		t.Fatal(firstParty.err)
	}
	return firstParty.modules
}

// pluginDir returns a new plugin directory holding the first-party modules.
func pluginDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for file, b := range firstPartyModules(t) {
		writeFile(t, filepath.Join(dir, file), b)
	}
	return dir
}

// writeFile drops a file the way the docs ask: written beside, renamed in.
func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// sum adds counts up.
func sum(cs []uint64) uint64 {
	var n uint64
	for _, c := range cs {
		n += c
	}
	return n
}

// rebuilt returns mod with a custom section appended: the same plugin
// under another digest, as another build of it would be.
func rebuilt(mod []byte, tag string) []byte {
	uleb := func(n int) []byte {
		var out []byte
		for {
			b := byte(n & 0x7f)
			n >>= 7
			if n == 0 {
				return append(out, b)
			}
			out = append(out, b|0x80)
		}
	}
	const name = "warden.test"
	payload := append(uleb(len(name)), name...)
	payload = append(payload, tag...)
	out := append([]byte{}, mod...)
	out = append(out, 0) // custom section
	out = append(out, uleb(len(payload))...)
	return append(out, payload...)
}

// logged is a slog handler that keeps records and passes them on.
type logged struct {
	next slog.Handler
	mu   *sync.Mutex
	recs *[]slog.Record
}

func newLogged(t *testing.T) logged {
	return logged{next: slog.NewTextHandler(tlog{t}, nil), mu: &sync.Mutex{}, recs: &[]slog.Record{}}
}

func (l logged) Enabled(context.Context, slog.Level) bool { return true }

func (l logged) Handle(ctx context.Context, r slog.Record) error {
	l.mu.Lock()
	*l.recs = append(*l.recs, r.Clone())
	l.mu.Unlock()
	return l.next.Handle(ctx, r)
}

func (l logged) WithAttrs(as []slog.Attr) slog.Handler {
	return logged{l.next.WithAttrs(as), l.mu, l.recs}
}

func (l logged) WithGroup(g string) slog.Handler {
	return logged{l.next.WithGroup(g), l.mu, l.recs}
}

// find returns the attributes of the records at level with message msg.
func (l logged) find(level slog.Level, msg string) []map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]string
	for _, r := range *l.recs {
		if r.Level == level && r.Message == msg {
			m := map[string]string{}
			r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
			out = append(out, m)
		}
	}
	return out
}

type pluginFixture struct {
	*fixture
	dir  string
	gens server.GenerationLog
	log  logged
}

// newPluginFixture serves the approval scenario's agent with the
// first-party plugins of dir as wasm slots.
func newPluginFixture(t *testing.T, dir string, gens server.GenerationLog) *pluginFixture {
	t.Helper()
	opts, toolSrv := scenarioOptions(t)
	h, err := host.New(host.Options{CacheDir: testdata.CacheDir(t), Clock: func() time.Time { return pluginClock }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	lg := newLogged(t)
	opts.Host, opts.Plugins, opts.Generations, opts.Instance = h, dir, gens, "i-test"
	opts.Policy = host.Policy{Limits: host.DefaultLimits}
	opts.Policy.Limits.TimeoutMs = 5000
	opts.Logger = slog.New(lg)
	srv, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	if err := srv.LoadPlugins(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(checkAPI(t, srv.Handler()))
	t.Cleanup(hs.Close)
	return &pluginFixture{fixture: &fixture{srv: srv, ts: hs, tools: toolSrv}, dir: dir, gens: gens, log: lg}
}

// scenarioOptions are the server options of the approval scenario's
// agent, tools and model, with an admin key and the fixed clock.
func scenarioOptions(t *testing.T) (server.Options, *tscripted.Server) {
	t.Helper()
	sc, err := scenario.Load(filepath.Join(testdata.Root(), approvalScenario))
	if err != nil {
		t.Fatal(err)
	}
	var skills []*skillstore.Skill
	for _, sk := range sc.Skills {
		c, _, err := contract.Parse(sk.SkillKey, sk.Contract)
		if err != nil {
			t.Fatal(err)
		}
		skills = append(skills, &skillstore.Skill{Profile: contract.SkillProfile{SkillKey: sk.SkillKey, SkillName: sk.SkillName,
			SkillManual: sk.Manual, SkillContract: string(sk.Contract)}, Contract: c, ToolNames: sk.ToolNames})
	}
	var ts []tscripted.Tool
	for _, st := range sc.Tools.Scripted {
		ts = append(ts, tscripted.Tool{Tool: tools.Tool{Name: st.Name, Description: st.Description, InputSchema: st.Schema},
			Write: st.Write, Handler: tscripted.Fixed(string(st.Responses[0]))})
	}
	toolSrv := tscripted.New(nil, ts...)
	agent := server.Agent{Profile: sc.Agent, Skills: skills}
	return server.Options{
		Keys:      map[string]string{keyAcme: "acme", keyGlobex: "globex"},
		AdminKeys: []string{keyAdmin},
		Agents: agentsFunc(func(context.Context, string) (server.Agent, error) {
			return agent, nil
		}),
		Tools:    toolSrv,
		NewModel: func(string, string) (model.Model, error) { return mscripted.New(sc.Model) },
		Loop:     loop.DefaultConfig(),
		Now:      func() time.Time { return pluginClock },
	}, toolSrv
}

// slotInfo reads a slot through the admin API.
func (f *pluginFixture) slotInfo(t *testing.T, slot string) server.SlotInfo {
	t.Helper()
	var in server.SlotInfo
	if code, eb := f.do(t, "GET", "/admin/v1/slots/"+slot, keyAdmin, "", &in); code != http.StatusOK {
		t.Fatalf("get slot %s: %d %+v", slot, code, eb)
	}
	return in
}

// TestLoadPlugins: every first-party module of the directory serves as a
// slot of generation 1, named by chain position or builtin, recorded as
// installed at start.
func TestLoadPlugins(t *testing.T) {
	t.Parallel()
	gens := server.NewMemoryGenerations()
	f := newPluginFixture(t, pluginDir(t), gens)
	var list struct {
		Slots []server.SlotInfo `json:"slots"`
	}
	f.do(t, "GET", "/admin/v1/slots", keyAdmin, "", &list)
	want := []struct{ slot, file, ref string }{
		{"ArgBinding", "argbinding.wasm", "argbinding@"}, {"ArgPolicy", "argpolicy.wasm", "argpolicy@"},
		{"Evidence", "evidence.wasm", "evidence@"}, {"Fingerprint", "fingerprint.wasm", "fingerprint@"},
		{"ParamContract", "paramcontract.wasm", "paramcontract@"}, {"ResponseContract", "responsecontract.wasm", "responsecontract@"},
		{"WriteGate", "writegate.wasm", "writegate@"},
		{"control", "control.wasm", "builtin-control@"}, {"env", "env.wasm", "builtin.env@"}, {"node", "node.wasm", "builtin-node@"},
	}
	if len(list.Slots) != len(want) {
		t.Fatalf("%d slots, want %d: %+v", len(list.Slots), len(want), list.Slots)
	}
	for i, w := range want {
		sl := list.Slots[i]
		digest := host.Digest(firstPartyModules(t)[w.file])
		if sl.Name != w.slot || sl.Current.Number != 1 || sl.Current.Digest != digest || !strings.HasPrefix(sl.Current.Ref, w.ref) {
			t.Fatalf("slot %d = %s #%d %s %s, want %s #1 %s %s…", i, sl.Name, sl.Current.Number, sl.Current.Ref, sl.Current.Digest, w.slot, digest, w.ref)
		}
		recs, err := gens.Generations(context.Background(), w.slot)
		if err != nil {
			t.Fatal(err)
		}
		r := recs[0]
		if len(recs) != 1 || r.Event != server.GenerationInstalled || r.Number != 1 || r.Digest != digest || r.Ref != sl.Current.Ref ||
			r.Origin != server.OriginStart || r.File != w.file || r.Instance != "i-test" || !r.Time.Equal(pluginClock) || r.Reason != "" {
			t.Fatalf("%s records = %+v", w.slot, recs)
		}
	}
}

// TestLoadPluginsShared: a plugin directory holding the first-party module
// (firstparty.wasm) serves every first-party slot from it, bound to the
// slot's plugin and compiled once; a slot's own module beside it takes
// that slot's place, and taking it away returns the slot to the shared
// module, as the slot's next generation.
func TestLoadPluginsShared(t *testing.T) {
	t.Parallel()
	path, err := testdata.Build("./plugins/firstparty/cmd")
	if err != nil {
		t.Fatal(err)
	}
	shared, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "firstparty.wasm"), shared)
	own := firstPartyModules(t)["writegate.wasm"]
	writeFile(t, filepath.Join(dir, "writegate.wasm"), own)
	gens := server.NewMemoryGenerations()
	f := newPluginFixture(t, dir, gens)
	for _, p := range plugins.All {
		sl := f.slotInfo(t, p.Name)
		digest, file := host.Digest(host.SelectPlugin(shared, p.Plugin.Manifest.Name)), "firstparty.wasm"
		if p.Name == "WriteGate" {
			digest, file = host.Digest(own), "writegate.wasm"
		}
		recs, err := gens.Generations(context.Background(), p.Name)
		if err != nil {
			t.Fatal(err)
		}
		if sl.Current.Number != 1 || sl.Current.Digest != digest || len(recs) != 1 || recs[0].Digest != digest || recs[0].File != file {
			t.Fatalf("%s: %+v, records %+v; want digest %s from %s", p.Name, sl.Current, recs, digest, file)
		}
	}
	if err := os.Remove(filepath.Join(dir, "writegate.wasm")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := f.srv.Scan(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	want := host.Digest(host.SelectPlugin(shared, "writegate"))
	if wg := f.slotInfo(t, "WriteGate"); wg.Current.Number != 2 || wg.Current.Digest != want {
		t.Fatalf("after taking writegate.wasm away: %+v, want generation 2 %s", wg.Current, want)
	}
}

// TestLoadPluginsErrors: a missing or bad module or sidecar stops the
// start with an error naming the file, and a refusal is recorded.
func TestLoadPluginsErrors(t *testing.T) {
	t.Parallel()
	mods := firstPartyModules(t)
	wg := host.Digest(mods["writegate.wasm"])
	unitconvPath, err := testdata.Build("./examples/builtins/unitconv/cmd")
	if err != nil {
		t.Fatal(err)
	}
	unitconv, err := os.ReadFile(unitconvPath)
	if err != nil {
		t.Fatal(err)
	}
	junk := []byte("\x00asm\x01\x00\x00\x00junk")
	tests := []struct {
		name  string
		setup func(dir string) // changes a fresh directory
		opts  func(o *server.Options)
		is    error
		msg   string // <dir> stands for the directory
		// refused is the digest recorded as refused for WriteGate, if any.
		refused string
	}{
		{"missing module", func(dir string) { os.Remove(filepath.Join(dir, "writegate.wasm")) }, nil,
			fs.ErrNotExist, "server: plugin <dir>/writegate.wasm: open: no such file or directory (nor is there a firstparty.wasm serving it)", ""},
		{"not a module", func(dir string) { os.WriteFile(filepath.Join(dir, "writegate.wasm"), junk, 0o644) }, nil,
			host.ErrCompile, "server: plugin <dir>/writegate.wasm: host: slot WriteGate: candidate: host: compile writegate.wasm: " +
				"module does not compile: host: module cannot be instrumented: meter: section headers: truncated or bad encoding at byte 10: malformed module", host.Digest(junk)},
		{"pin mismatch", func(dir string) {
			os.WriteFile(filepath.Join(dir, "writegate.json"), []byte(`{"sha256":"sha256:`+strings.Repeat("0", 64)+`"}`), 0o644)
		}, nil, host.ErrDigestMismatch, "server: plugin <dir>/writegate.wasm: host: slot WriteGate: candidate: host: load writegate.wasm: sha256 " +
			wg + ", pinned " + strings.Repeat("0", 64) + ": module digest does not match its pin", wg},
		{"unknown sidecar key", func(dir string) {
			os.WriteFile(filepath.Join(dir, "writegate.json"), []byte(`{"sha":"`+wg+`"}`), 0o644)
		}, nil, server.ErrSidecar, `server: invalid plugin sidecar <dir>/writegate.json: abi: strict json: unknown key "sha" in $`, ""},
		{"sidecar pin twice", func(dir string) {
			os.WriteFile(filepath.Join(dir, "writegate.json"), []byte(`{"sha256":"`+wg+`","sha256":"`+strings.Repeat("0", 64)+`"}`), 0o644)
		}, nil, abi.ErrDuplicateKey, `server: invalid plugin sidecar <dir>/writegate.json: abi: strict json: duplicate key "sha256" in $`, ""},
		{"sidecar pin in another case", func(dir string) {
			os.WriteFile(filepath.Join(dir, "writegate.json"), []byte(`{"SHA256":"`+wg+`"}`), 0o644)
		}, nil, abi.ErrKeyCase, `server: invalid plugin sidecar <dir>/writegate.json: abi: strict json: key in the wrong case: "SHA256" in $ must be spelled "sha256"`, ""},
		{"two sidecar values", func(dir string) {
			os.WriteFile(filepath.Join(dir, "writegate.json"), []byte(`{} {}`), 0o644)
		}, nil, server.ErrSidecar, `server: invalid plugin sidecar <dir>/writegate.json: more than one JSON value`, ""},
		{"config against the schema", func(dir string) {
			os.WriteFile(filepath.Join(dir, "evidence.json"), []byte(`{"config":{"maxPayloadBytes":1}}`), 0o644)
		}, nil, host.ErrConfig, "server: plugin <dir>/evidence.wasm: host: slot Evidence: candidate: host: load evidence.wasm: config: " +
			"maxPayloadBytes: 1 is less than the minimum 64: plugin config rejected", ""},
		// A builtin asking for no capability, so that its role is what
		// refuses it.
		{"a builtin as a guard", func(dir string) { os.WriteFile(filepath.Join(dir, "writegate.wasm"), unitconv, 0o644) }, nil,
			server.ErrSlotRole, "server: plugin <dir>/writegate.wasm: host: slot WriteGate: self-test of acme.unitconv@1.2.0: " +
				"server: candidate does not fit its slot: slot WriteGate takes a guard [before after], acme.unitconv@1.2.0 is a builtin []",
			host.Digest(unitconv)},
		{"a builtin asking for more than a guard's capabilities", func(dir string) {
			os.WriteFile(filepath.Join(dir, "writegate.wasm"), mods["node.wasm"], 0o644)
		}, nil, host.ErrNotGranted, "server: plugin <dir>/writegate.wasm: host: slot WriteGate: candidate: host: load writegate.wasm: " +
			"plugin asks for capabilities it is not granted: builtin-node@1.0.0 asks for state.node, state.evidence, state.conversation, " +
			"state.followup, state.entities, effect.output, effect.state; it may have state.ledger, state.approval, effect.ledger " +
			"(not granted: state.node, state.evidence, state.conversation, state.followup, state.entities, effect.output, effect.state)",
			host.Digest(mods["node.wasm"])},
		{"a WriteGate asking for more than WriteGate's capabilities", func(dir string) {
			os.WriteFile(filepath.Join(dir, "writegate.wasm"), testdata.Bytes(t, "writegate-escalate"), 0o644)
		}, nil, host.ErrNotGranted, "server: plugin <dir>/writegate.wasm: host: slot WriteGate: candidate: host: load writegate.wasm: " +
			"plugin asks for capabilities it is not granted: writegate@1.2.0 asks for state.ledger, state.approval, effect.ledger, " +
			"effect.node, effect.output, state.conversation, clock, random; it may have state.ledger, state.approval, effect.ledger " +
			"(not granted: effect.node, effect.output, state.conversation, clock, random)", host.Digest(testdata.Bytes(t, "writegate-escalate"))},
		{"no host", nil, func(o *server.Options) { o.Host = nil },
			server.ErrConfig, "server: invalid options: a plugin directory without a plugin host", ""},
		{"with builtins", nil, func(o *server.Options) { o.Builtins = []loop.Builtin{} },
			server.ErrConfig, "server: invalid options: a plugin directory with Guards or Builtins", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := pluginDir(t)
			if tt.setup != nil {
				tt.setup(dir)
			}
			opts, _ := scenarioOptions(t)
			opts.AdminKeys = nil
			h, err := host.New(host.Options{CacheDir: testdata.CacheDir(t)})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close(context.Background())
			gens := server.NewMemoryGenerations()
			opts.Host, opts.Plugins, opts.Generations = h, dir, gens
			if tt.opts != nil {
				tt.opts(&opts)
			}
			srv, err := server.New(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			err = srv.LoadPlugins(context.Background())
			if want := strings.ReplaceAll(tt.msg, "<dir>", dir); !errors.Is(err, tt.is) || err.Error() != want {
				t.Fatalf("LoadPlugins:\n got %v\nwant %s", err, want)
			}
			recs, _ := gens.Generations(context.Background(), "WriteGate")
			var refused []string
			for _, r := range recs {
				if r.Event == server.GenerationRefused {
					refused = append(refused, r.Digest)
					if r.Origin != server.OriginStart || r.File != "writegate.wasm" || !strings.HasPrefix(r.Reason, "host: slot WriteGate: ") {
						t.Fatalf("refusal = %+v", r)
					}
				}
			}
			if (tt.refused == "") != (len(refused) == 0) || (tt.refused != "" && (len(refused) != 1 || refused[0] != tt.refused)) {
				t.Fatalf("WriteGate refusals %v, want %q", refused, tt.refused)
			}
		})
	}
}

// TestPluginSession: a session runs through the wasm guards and builtins,
// and a WriteGate swap found in the directory reaches the session already
// open: its approved write passes the new generation.
func TestPluginSession(t *testing.T) {
	t.Parallel()
	gens := server.NewMemoryGenerations()
	f := newPluginFixture(t, pluginDir(t), gens)
	sid, res := f.suspend(t)
	if res.Task.Status != "SUSPENDED" || res.Approval == nil || !hasEvent(res.Events, "TOOL", "create_site", "DEFERRED", "APPROVAL_REQUIRED") {
		t.Fatalf("message: task %+v, events %+v", res.Task, res.Events)
	}
	// The TOOL event names every guard that ran, with the plugin and
	// generation that served it, in the answer and in the stored trace.
	wantGuards := func(evs []server.Event, wgGen uint64) {
		t.Helper()
		i := slices.IndexFunc(evs, func(e server.Event) bool { return e.Kind == loop.KindTool && e.Tool == "create_site" })
		if i < 0 {
			t.Fatalf("no create_site TOOL event in %+v", evs)
		}
		e := evs[i]
		var names []string
		for _, g := range e.Guards {
			names = append(names, g.Phase+" "+g.Guard)
			want := uint64(1)
			if g.Guard == "WriteGate" {
				want = wgGen
			}
			if g.Generation != want || g.Plugin == "" || g.Verdict == "" {
				t.Fatalf("guard %+v: want generation %d, its plugin and verdict (event %+v)", g, want, e)
			}
		}
		if !slices.Contains(names, "before WriteGate") || !slices.Contains(names, "before ArgPolicy") || len(names) < 4 {
			t.Fatalf("guards of create_site: %v", names)
		}
		if e.Guard != "" && e.Generation != e.Guards[len(e.Guards)-1].Generation {
			t.Fatalf("decider %s gen %d, last guard %+v", e.Guard, e.Generation, e.Guards[len(e.Guards)-1])
		}
	}
	wantGuards(res.Events, 1)
	// A builtin's call names the builtin's slot generation.
	if i := slices.IndexFunc(res.Events, func(e server.Event) bool { return e.Kind == loop.KindTool && e.Tool == "builtin_node_approval" }); i < 0 ||
		res.Events[i].Generation != 1 || !strings.HasPrefix(res.Events[i].Plugin, "builtin-control@") {
		t.Fatalf("builtin_node_approval's event does not name its generation: %+v", res.Events)
	}
	var trace struct {
		Events []server.Event `json:"events"`
	}
	if code, eb := f.do(t, "GET", "/v1/sessions/"+sid+"/tasks/"+res.Task.ID+"/trace", keyAcme, "", &trace); code != http.StatusOK {
		t.Fatalf("trace: %d %+v", code, eb)
	}
	wantGuards(trace.Events, 1)

	wg := f.slotInfo(t, "WriteGate")
	if wg.Stats.Deferred != 1 {
		t.Fatalf("wasm WriteGate deferred %d calls, want 1 (stats %+v)", wg.Stats.Deferred, wg.Stats)
	}
	// The approval; its load check and self-test are counted apart.
	if c := f.slotInfo(t, "control"); c.Stats.Calls != 1 || c.Stats.Probes == 0 {
		t.Fatalf("wasm control builtin called %d times, probed %d times", c.Stats.Calls, c.Stats.Probes)
	}

	next := rebuilt(firstPartyModules(t)["writegate.wasm"], "v2")
	writeFile(t, filepath.Join(f.dir, "writegate.wasm"), next)
	for range 2 {
		if err := f.srv.Scan(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	wg = f.slotInfo(t, "WriteGate")
	if wg.Current.Number != 2 || wg.Current.Digest != host.Digest(next) || len(wg.Generations) != 2 || wg.Generations[0].Retired == nil {
		t.Fatalf("after the swap: %+v", wg)
	}
	// Each generation keeps its own counters: the retired one's deferral
	// stays with it, the new one starts from its own load check.
	if g1, g2 := wg.Generations[0].Stats, wg.Generations[1].Stats; g1 == nil || g2 == nil || g1.Deferred != 1 || g2.Deferred != 0 ||
		g1.Digest == g2.Digest || g2.Calls != wg.Stats.Calls {
		t.Fatalf("generation stats after the swap: %+v / %+v (serving %+v)", g1, g2, wg.Stats)
	}
	before := wg.Stats.Calls // none: its probes are counted apart

	var done server.RunResult
	if code, eb := f.do(t, "POST", "/v1/approvals/"+res.Approval.ID, keyAcme, `{"decision":"CONFIRM"}`, &done); code != http.StatusOK {
		t.Fatalf("CONFIRM: %d %+v", code, eb)
	}
	if done.Task.Status != "DONE" || f.tools.Count("create_site") != 1 {
		t.Fatalf("task after CONFIRM = %+v, create_site calls %d", done.Task, f.tools.Count("create_site"))
	}
	if wg = f.slotInfo(t, "WriteGate"); wg.Stats.Calls <= before {
		t.Fatalf("session %s did not reach generation 2: %d calls, %d before", sid, wg.Stats.Calls, before)
	}
	// The approved write's event names the generation that decided it.
	wantGuards(done.Events, 2)
	// The store's history keeps each generation's served calls, the
	// retired one's too, with the probes counted apart.
	if len(wg.Kept) != 2 || wg.Kept[0].Counts == nil || wg.Kept[1].Counts == nil {
		t.Fatalf("kept generations: %+v", wg.Kept)
	}
	k1, k2 := wg.Kept[0].Counts, wg.Kept[1].Counts
	if k1.Calls == 0 || k1.Outcomes["deferred"] != 1 || k1.Probes == 0 || sum(k1.Latency.Counts) != k1.Calls || k1.P50Ms == nil ||
		!slices.Equal(k1.Instances, []string{"i-test"}) || k2.Calls != wg.Stats.Calls || k2.Outcomes["pass"] == 0 || k2.Outcomes["deferred"] != 0 {
		t.Fatalf("counts of generation 1 %+v, of 2 %+v (serving %+v)", k1, k2, wg.Stats)
	}
	recs, _ := gens.Generations(context.Background(), "WriteGate")
	if len(recs) != 2 || recs[1].Event != server.GenerationInstalled || recs[1].Number != 2 || recs[1].Origin != server.OriginWatch ||
		recs[1].File != "writegate.wasm" || recs[1].Digest != host.Digest(next) {
		t.Fatalf("WriteGate records = %+v", recs)
	}
}
