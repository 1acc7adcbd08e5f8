// Command quickstart shows Warden's foundation end to end on embedded
// defaults: it loads the example skill store, builds the argcheck guard to
// WebAssembly, and runs guarded tool calls through the host — a good call, a
// bad one, and a hostile guard that never returns, contained by its deadline.
//
//	go run ./examples/quickstart        (or: make demo)
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/skillstore"
	"github.com/agentwarden/warden/internal/testdata"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// The tool being guarded: its MCP input schema and its skill contract.
const (
	schema = `{"type":"object","additionalProperties":false,"required":["title","spaceId","body"],"properties":{` +
		`"title":{"type":"string","minLength":2,"maxLength":80},"spaceId":{"type":"integer","minimum":1},` +
		`"body":{"type":"string"},"publishAt":{"type":"string","format":"date-time"}}}`
	toolContract = `{"sideEffect":"WRITE","args":{"title":{"sources":["USER"]},"spaceId":{"from":"shared.spaceId"}}}`
)

func run(ctx context.Context, out io.Writer) error {
	root := testdata.Root()

	// 1. The skill store: four tables, contracts validated at load.
	store := skillstore.NewDirStore(filepath.Join(root, "contract", "testdata", "store"))
	agent, err := skillstore.NewLoader(store, slog.New(slog.DiscardHandler)).Load(ctx, "cms-editor")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "agent %s: %d skill(s) loaded, %d dropped\n", agent.Profile.AgentCode, len(agent.Skills), len(agent.Dropped))
	for _, s := range agent.Skills {
		fmt.Fprintf(out, "  skill %s tools=%v\n", s.Profile.SkillKey, s.ToolNames)
	}
	for _, d := range agent.Dropped {
		fmt.Fprintf(out, "  dropped %s: %v\n", d.Profile.SkillKey, d.Err)
	}

	// 2. The host: compiled code is cached on disk across runs.
	h, err := host.New(host.Options{CacheDir: filepath.Join(root, "bin", "cache")})
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	guard, err := load(ctx, h, "./examples/guards/argcheck/cmd", host.Policy{})
	if err != nil {
		return err
	}
	st := guard.Stats()
	fmt.Fprintf(out, "\nguard %s loaded (%s ABI, sha256 %s…, %.1f MiB per instance)\n",
		guard.Ref(), guard.Loader(), guard.Digest()[:12], float64(st.InstanceMemoryBytes)/(1<<20))

	// 3. Guarded calls: the guard decides, the host enforces the result.
	calls := []struct {
		label  string
		args   string
		locale abi.Locale
	}{
		{"complete arguments", `{"title":"Q3 report","spaceId":7,"body":"Revenue grew."}`, ""},
		{"spaceId comes from the contract", `{"title":"Q3 report","body":"Revenue grew."}`, ""},
		{"missing body, bad date", `{"title":"Q3 report","publishAt":"tomorrow"}`, ""},
		{"the same, in English", `{"title":"Q3 report","publishAt":"tomorrow"}`, abi.LocaleEN},
	}
	for _, c := range calls {
		v := guard.Guard(ctx, "tenant-a", &abi.Request{Phase: abi.PhaseBefore, Tool: "create_article",
			Args: json.RawMessage(c.args), Schema: json.RawMessage(schema), Contract: json.RawMessage(toolContract), Locale: c.locale})
		fmt.Fprintf(out, "- %s\n  %s\n", c.label, describe(v))
	}

	// 4. A hostile guard that loops forever: the deadline stops it, the
	// guarded call fails closed, and the host keeps serving.
	loop, err := load(ctx, h, "./internal/testdata/guests/loop", host.Policy{Limits: abi.Limits{TimeoutMs: 100}})
	if err != nil {
		return err
	}
	v := loop.Guard(ctx, "tenant-a", &abi.Request{Phase: abi.PhaseBefore, Tool: "create_article", Args: json.RawMessage(`{}`)})
	fmt.Fprintf(out, "\nhostile guard %s (never returns, 100 ms deadline)\n  %s\n", loop.Ref(), describe(v))
	v = guard.Guard(ctx, "tenant-a", &abi.Request{Phase: abi.PhaseBefore, Tool: "create_article",
		Args: json.RawMessage(calls[0].args), Schema: json.RawMessage(schema), Contract: json.RawMessage(toolContract)})
	fmt.Fprintf(out, "- the next call on %s\n  %s\n", guard.Ref(), describe(v))
	ls := loop.Stats()
	// A fresh spare may start in the background after the close, so the
	// calls in flight, not the instances live, say that nothing is stuck.
	fmt.Fprintf(out, "\n%s: %d timeout(s), %d instance(s) closed, %d call(s) in flight\n", loop.Ref(), ls.Timeouts, ls.InstancesClosed, ls.InFlight)
	return nil
}

func load(ctx context.Context, h *host.Host, pkg string, pol host.Policy) (*host.Plugin, error) {
	path, err := testdata.Build(pkg)
	if err != nil {
		return nil, err
	}
	src, err := host.ReadSource(path, "")
	if err != nil {
		return nil, err
	}
	return h.Load(ctx, src, pol)
}

func describe(v abi.Verdict) string {
	if v.Pass {
		return "PASS"
	}
	o := v.Observation
	info, _ := o.Info()
	return fmt.Sprintf("%s %s [%s, %s]: %s", o.Outcome, o.Code, info.Category, info.Signal, o.Message())
}
