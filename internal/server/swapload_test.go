package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/loadgen"
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/server"
	"github.com/agentwarden/warden/internal/skillstore"
	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/internal/tools"
	tscripted "github.com/agentwarden/warden/internal/tools/scripted"
	"github.com/agentwarden/warden/loop"
	"github.com/agentwarden/warden/plugins/guards/writegate"
)

// The swap-under-load test's tenant and admin keys.
const (
	swapTenantKey = "key-load"
	swapAdminKey  = "key-load-admin"
)

// swapContract is the skill under load: one WRITE tool whose idempotency
// key is the id the user gave, confirm: false and listed in the session's
// write-confirm-bypass-tools, so WriteGate reserves and settles the write
// without holding it for approval.
const swapContract = `{
  "tools": {
    "record_write": {
      "label": "记录写入",
      "sideEffect": "WRITE",
      "confirm": false,
      "idempotencyKey": ["id"],
      "args": {"id": {"sources": ["USER"], "label": "编号"}},
      "success": {"path": "code", "op": "EQ", "value": 200},
      "error": {"code": "code", "message": "msg"}
    }
  }
}`

// writeModel answers a task's first turn with one record_write call
// carrying the id of the user's message ("write <id>"), and the turn after
// its observation with builtin_node_finish. It keeps no state, so every
// session can share it.
type writeModel struct{}

func (writeModel) Complete(_ context.Context, req model.Request) (model.Response, error) {
	user, id := -1, ""
	for i, m := range req.Messages {
		if m.Role == model.RoleUser {
			if rest, ok := strings.CutPrefix(m.Content, "write "); ok {
				user, id = i, rest
			}
		}
	}
	if user < 0 {
		return model.Response{}, fmt.Errorf("writeModel: no \"write <id>\" message among %d", len(req.Messages))
	}
	call := model.ToolCall{ID: "write-" + id, Name: "record_write", Arguments: `{"id":"` + id + `"}`}
	for _, m := range req.Messages[user+1:] {
		if m.Role == model.RoleAssistant {
			call = model.ToolCall{ID: "finish-" + id, Name: "builtin_node_finish", Arguments: `{"output":"written ` + id + `"}`}
		}
	}
	return model.Response{Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{call}},
		FinishReason: model.FinishToolCalls}, nil
}

// swapLog sends the server's warnings and errors to the test's log.
type swapLog struct{ t testing.TB }

func (l swapLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// swapPlan shapes one swap-under-load run. The controller is paced by
// completed requests, not by time: a steady window, then for each swap or
// rollback a swapping window and a steady one; then the run stops.
// requests and duration only bound it.
type swapPlan struct {
	workers int
	// swaps is the number of swaps; a rollback follows every 7th.
	swaps int
	// steady requests complete in each steady window: before the first
	// swap and after each swap or rollback's window.
	steady int
	// between requests complete after a swap or rollback in its window.
	between int
	// perSession tasks run in one session before its worker opens another:
	// a task's latency grows with the tasks its session ran before (about
	// 7 µs each on a 2-core machine), which would otherwise tilt later
	// windows against earlier ones.
	perSession int
	// interval paces each worker (loadgen.Options.Interval); 0 runs them
	// back to back.
	interval time.Duration
	requests int
	duration time.Duration
	// cold makes every swap install a module no host has compiled (the
	// first-party module with a custom section naming the swap and the
	// run), through a host whose compile worker is this test binary
	// unless inProcess; otherwise the swaps alternate between two builds
	// compiled before the load.
	cold, inProcess bool
}

// swapEnv reads the knobs of a longer run for the figures into p:
// WARDEN_SWAPLOAD_SCALE=n runs n times the swaps and steady requests;
// WARDEN_SWAPLOAD_INTERVAL paces each worker (a Go duration, "0" runs them
// back to back); WARDEN_SWAPLOAD_WORKER=off compiles a cold swap's module
// in the serving process, for the figures without the compile worker.
func swapEnv(t testing.TB, p *swapPlan) {
	if v := os.Getenv("WARDEN_SWAPLOAD_SCALE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("WARDEN_SWAPLOAD_SCALE=%q: want a positive integer", v)
		}
		p.swaps, p.steady, p.requests, p.duration = n*p.swaps, n*p.steady, n*p.requests, time.Duration(n)*p.duration
	}
	switch v := os.Getenv("WARDEN_SWAPLOAD_WORKER"); v {
	case "", "on":
	case "off":
		p.inProcess = true
	default:
		t.Fatalf("WARDEN_SWAPLOAD_WORKER=%q: want on or off", v)
	}
	if v := os.Getenv("WARDEN_SWAPLOAD_INTERVAL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			t.Fatalf("WARDEN_SWAPLOAD_INTERVAL=%q: want a duration, 0 or more", v)
		}
		p.interval = d
	}
}

// withCustomSection returns module with a custom section appended: the
// same code under another digest, so that two builds of one plugin can
// alternate and each generation shows which one serves.
func withCustomSection(module []byte, name, payload string) []byte {
	uleb := func(b []byte, v int) []byte {
		for {
			c := byte(v & 0x7f)
			v >>= 7
			if v != 0 {
				b = append(b, c|0x80)
				continue
			}
			return append(b, c)
		}
	}
	body := append(uleb(nil, len(name)), name...)
	body = append(body, payload...)
	out := append(append([]byte(nil), module...), 0) // section id 0: custom
	out = uleb(out, len(body))
	return append(out, body...)
}

// swapRig is a server on a loopback listener with a real plugin host.
type swapRig struct {
	url    string
	client *http.Client
	tools  *tscripted.Server
}

func newSwapRig(t *testing.T, h *host.Host) *swapRig {
	t.Helper()
	c, _, err := contract.Parse("load.writer", []byte(swapContract))
	if err != nil {
		t.Fatal(err)
	}
	agent := server.Agent{
		Profile: contract.AgentProfile{AgentName: "写入助手", IdentityDesc: "你是写入助手", MissionDesc: "按用户给的编号记录写入"},
		Skills: []*skillstore.Skill{{Profile: contract.SkillProfile{SkillKey: "load.writer", SkillName: "记录写入",
			SkillManual: "用用户给的编号调用 record_write，然后结束。", SkillContract: swapContract}, Contract: c, ToolNames: []string{"record_write"}}},
	}
	toolSrv := tscripted.New(nil, tscripted.Tool{
		Tool: tools.Tool{Name: "record_write", Description: "记录一次写入",
			InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["id"],"properties":{"id":{"type":"string","minLength":1}}}`)},
		Write: true,
		Handler: func(_ *tscripted.State, args json.RawMessage) (json.RawMessage, error) {
			var a struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(args, &a); err != nil {
				return nil, err
			}
			return json.Marshal(map[string]any{"code": 200, "msg": "ok", "data": map[string]string{"id": a.ID}})
		},
	})
	srv, err := server.New(server.Options{
		Guards: chain.NativeGuards(), Builtins: loop.NativeBuiltins(time.Now),
		Keys:      map[string]string{swapTenantKey: "load"},
		AdminKeys: []string{swapAdminKey},
		Agents:    swapAgents{agent},
		Tools:     toolSrv,
		NewModel:  func(string, string) (model.Model, error) { return writeModel{}, nil },
		NewStore: func(_ string, opt state.Options) (state.Store, error) {
			opt.BypassTools = []string{"record_write"}
			return state.NewMemory(opt)
		},
		Loop:   loop.DefaultConfig(),
		Host:   h,
		Logger: slog.New(slog.NewTextHandler(swapLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	hs := httptest.NewServer(checkAPI(t, srv.Handler()))
	t.Cleanup(hs.Close)
	// The timeout only keeps a hung request from hanging the test (a
	// cold compile on a busy machine takes minutes).
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 10 * time.Minute}
	t.Cleanup(client.CloseIdleConnections)
	return &swapRig{url: hs.URL, client: client, tools: toolSrv}
}

type swapAgents struct{ a server.Agent }

func (s swapAgents) Agent(context.Context, string) (server.Agent, error) { return s.a, nil }

// call sends one request and decodes a 2xx answer into out; any other
// status is an error carrying the body.
func (r *swapRig) call(ctx context.Context, method, path, key string, body []byte, want int, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, r.url+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if method == "PUT" {
		req.Header.Set("Content-Type", "application/wasm")
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: %w: %s", method, path, err, b)
		}
	}
	return nil
}

func (r *swapRig) session(ctx context.Context) (string, error) {
	var s server.SessionInfo
	if err := r.call(ctx, "POST", "/v1/sessions", swapTenantKey, nil, http.StatusCreated, &s); err != nil {
		return "", err
	}
	return s.ID, nil
}

// write posts "write <id>" and checks that the task is DONE with exactly one
// successful record_write.
func (r *swapRig) write(ctx context.Context, session, id string) error {
	var res server.RunResult
	body := []byte(`{"text":"write ` + id + `"}`)
	if err := r.call(ctx, "POST", "/v1/sessions/"+session+"/messages?wait=5m", swapTenantKey, body, http.StatusOK, &res); err != nil {
		return err
	}
	writes, ok := 0, 0
	for _, e := range res.Events {
		if e.Kind == loop.KindTool && e.Tool == "record_write" {
			writes++
			if e.Outcome == "SUCCESS" {
				ok++
			}
		}
	}
	if res.Task.Status != state.Done || res.Task.Output != "written "+id || writes != 1 || ok != 1 {
		b, _ := json.Marshal(res)
		return fmt.Errorf("write %s: task %s %q, %d record_write events, %d successful: %s", id, res.Task.Status, res.Task.Output, writes, ok, b)
	}
	return nil
}

// swapOutcome is what one swap-under-load run measured.
type swapOutcome struct {
	result   loadgen.Result
	swaps    int
	rollback int
	// written counts record_write calls per id; issued are the ids sent.
	written map[string]int
	issued  []string
	slot    server.SlotInfo
	// served and started are the WriteGate calls each generation had
	// served and the instances it had started when last checked (before
	// its replacement was requested; the last one at the end), by
	// generation number.
	served, started map[uint64]uint64
	// compiles is how the host compiled the modules it had not compiled.
	compiles host.CompileStats
}

// runSwapLoad installs WriteGate as a wasm slot, opens the sessions, runs
// the load and swaps WriteGate p.swaps times (rolling it back after every
// 7th swap) while it runs. It fails the test on anything but a clean run;
// the caller checks the counts and reports the figures.
func runSwapLoad(t *testing.T, p swapPlan) swapOutcome {
	ctx := context.Background()
	opts := host.Options{CacheDir: testdata.CacheDir(t)}
	if p.cold && !p.inProcess {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		// TestMain serves as the worker; -test.run=^$ makes a binary
		// that would not run no test and answer out of protocol.
		opts.CompileWorker = &host.CompileWorker{Path: exe, Args: []string{"-test.run=^$"}}
	}
	h, err := host.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	path, err := testdata.Build("./plugins/guards/writegate/cmd")
	if err != nil {
		t.Fatal(err)
	}
	modA, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	modB := withCustomSection(modA, "warden.loadtest", "build b")
	digest := map[string]string{"a": host.Digest(modA), "b": host.Digest(modB)}
	// Modules go up as application/wasm, pinned by ?sha256=: no base64
	// and no JSON scan of several MiB in the swap.
	bodies := map[string][]byte{"a": modA, "b": modB}
	installPath := func(build string) string { return "/admin/v1/slots/WriteGate?sha256=" + digest[build] }
	if !p.cold {
		// Compile build b once before the load, so that every swap loads
		// from the compilation cache as build a's do after the first
		// install: the windows compare swapping, not a cold compile.
		if pb, err := h.Load(ctx, host.Source{Name: "writegate-b", Bytes: modB}, host.Policy{Capabilities: writegate.Plugin.Manifest.Capabilities}); err != nil {
			t.Fatal(err)
		} else {
			_ = pb.Close(ctx)
		}
	}
	// next is the build swap i installs: the other of a and b, or, cold,
	// a build no host has seen, named by the swap and the run.
	run := time.Now().UnixNano()
	next := func(i int, serving string) string {
		if !p.cold {
			return map[string]string{"a": "b", "b": "a"}[serving]
		}
		name := fmt.Sprintf("cold%d", i+1)
		bodies[name] = withCustomSection(modA, "warden.loadtest", fmt.Sprintf("%s of run %d", name, run))
		digest[name] = host.Digest(bodies[name])
		return name
	}

	rig := newSwapRig(t, h)
	// WriteGate becomes a slot before any session exists: sessions created
	// afterwards run it in place of the in-process WriteGate.
	var info server.SlotInfo
	if err := rig.call(ctx, "PUT", installPath("a"), swapAdminKey, bodies["a"], http.StatusCreated, &info); err != nil {
		t.Fatal(err)
	}
	if info.Current.Number != 1 || info.Current.Digest != digest["a"] {
		t.Fatalf("first install serves #%d %s", info.Current.Number, info.Current.Digest)
	}
	out := swapOutcome{written: map[string]int{}, served: map[uint64]uint64{}, started: map[uint64]uint64{}}
	number, serving, prev := uint64(1), "a", ""
	digests := []string{digest["a"]}

	compiled := h.CompileStats()
	g, err := loadgen.New(loadgen.Options{Requests: p.requests, Duration: p.duration, Interval: p.interval, Phase: "steady"})
	if err != nil {
		t.Fatal(err)
	}
	issued := make([][]string, p.workers)
	workers := make([]loadgen.Request, p.workers)
	for w := range workers {
		sid, err := rig.session(ctx)
		if err != nil {
			t.Fatal(err)
		}
		workers[w] = func(ctx context.Context, seq int) error {
			if seq > 0 && seq%p.perSession == 0 {
				if sid, err = rig.session(ctx); err != nil {
					return err
				}
			}
			id := fmt.Sprintf("w%d-%06d", w, seq)
			issued[w] = append(issued[w], id)
			return rig.write(ctx, sid, id)
		}
	}
	type ran struct {
		r   loadgen.Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		r, err := g.Run(ctx, workers...)
		done <- ran{r, err}
	}()

	// The controller: it fails by returning, and the load is stopped and
	// awaited before the test fails.
	control := func() error {
		wait := func(n int) error {
			for mark := g.Completed(); g.Completed() < mark+n; {
				select {
				case r := <-done:
					done <- r
					return fmt.Errorf("the load ended (%s) after %d requests, before the controller was done", r.r.Bound, r.r.Total.Requests)
				case <-time.After(time.Millisecond):
				}
			}
			return nil
		}
		// check reads the slot: the expected generation serves, the
		// expected build, and it served calls without failing.
		check := func() error {
			var cur server.SlotInfo
			if err := rig.call(ctx, "GET", "/admin/v1/slots/WriteGate", swapAdminKey, nil, http.StatusOK, &cur); err != nil {
				return err
			}
			st := cur.Stats
			switch {
			case cur.Current.Number != number || cur.Current.Digest != digest[serving]:
				return fmt.Errorf("serving #%d %s, want #%d (build %s)", cur.Current.Number, cur.Current.Digest, number, serving)
			case st.Calls == 0:
				return fmt.Errorf("generation %d served no call: sessions do not run the slot", number)
			case st.Traps+st.Timeouts+st.MemoryLimits+st.Violations+st.OutputTooLarge+st.InputTooLarge+st.Unavailable != 0:
				return fmt.Errorf("generation %d failed calls: %+v", number, st)
			}
			out.served[number], out.started[number] = st.Calls, st.InstancesCreated
			return nil
		}
		// op swaps or rolls back in a window of its own: the slot is
		// checked, the phase is "swapping" while the admin request runs
		// (the candidate loads, starts and is self-tested beside the
		// load), "after swap" for the next p.between requests (the new
		// generation's first calls, the old one's last), then "steady"
		// for p.steady more. Interleaved, the windows see the same
		// background noise of a shared machine. The p.between+p.steady
		// requests after a swap, more than one per worker, make the new
		// generation serve calls before the next check.
		op := func(method, path string, body []byte, next string) error {
			if err := check(); err != nil {
				return err
			}
			g.SetPhase("swapping")
			// A cold install is "compiling" while the compile worker
			// runs, then "loading" while the server loads the compiled
			// module, starts, self-tests and swaps it.
			watched := make(chan struct{})
			stop := make(chan struct{})
			if p.cold && method == "PUT" {
				g.SetPhase("compiling")
				go func() {
					defer close(watched)
					for ran := h.CompileStats().Worker; ; {
						select {
						case <-stop:
							return
						case <-time.After(time.Millisecond):
						}
						if h.CompileStats().Worker > ran {
							g.SetPhase("loading")
							return
						}
					}
				}()
			} else {
				close(watched)
			}
			var got server.SlotInfo
			err := rig.call(ctx, method, path, swapAdminKey, body, http.StatusOK, &got)
			close(stop)
			<-watched
			if err != nil {
				return err
			}
			number, serving, prev = number+1, next, serving
			digests = append(digests, digest[next])
			if got.Current.Number != number || got.Current.Digest != digest[next] {
				return fmt.Errorf("%s %s: serving #%d %s, want #%d (build %s)", method, path, got.Current.Number, got.Current.Digest, number, next)
			}
			g.SetPhase("after swap")
			if err := wait(p.between); err != nil {
				return err
			}
			g.SetPhase("steady")
			return wait(p.steady)
		}
		if err := wait(p.steady); err != nil {
			return err
		}
		for i := range p.swaps {
			build := next(i, serving)
			if err := op("PUT", installPath(build), bodies[build], build); err != nil {
				return fmt.Errorf("swap %d: %w", i+1, err)
			}
			out.swaps++
			// A rollback after every 7th swap brings the build before
			// back, as a new generation.
			if (i+1)%7 == 0 {
				if err := op("POST", "/admin/v1/slots/WriteGate/rollback", nil, prev); err != nil {
					return fmt.Errorf("rollback after swap %d: %w", i+1, err)
				}
				out.rollback++
			}
		}
		return check()
	}
	ctrlErr := control()
	g.Stop()
	st := h.CompileStats()
	out.compiles = host.CompileStats{Worker: st.Worker - compiled.Worker, WorkerFailed: st.WorkerFailed - compiled.WorkerFailed,
		WorkerRefused: st.WorkerRefused - compiled.WorkerRefused, WorkerTime: st.WorkerTime - compiled.WorkerTime, Fallback: st.Fallback - compiled.Fallback}
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	out.result = res.r
	for _, f := range res.r.Failures {
		t.Errorf("worker %d request %d (%s): %v", f.Worker, f.Seq, f.Phase, f.Err)
	}
	if ctrlErr != nil {
		for _, ph := range res.r.Phases {
			t.Logf("%s", ph)
		}
		t.Fatalf("after %d swaps and %d rollbacks: %v", out.swaps, out.rollback, ctrlErr)
	}

	if err := rig.call(ctx, "GET", "/admin/v1/slots/WriteGate", swapAdminKey, nil, http.StatusOK, &out.slot); err != nil {
		t.Fatal(err)
	}
	for i, d := range digests {
		if i >= len(out.slot.Generations) || out.slot.Generations[i].Digest != d {
			t.Fatalf("generation %d is not build %s: %+v", i+1, d, out.slot.Generations)
		}
	}
	for _, ids := range issued {
		out.issued = append(out.issued, ids...)
	}
	for _, c := range rig.tools.Calls() {
		var a struct {
			ID string `json:"id"`
		}
		if c.Tool != "record_write" || json.Unmarshal(c.Args, &a) != nil {
			t.Fatalf("unexpected tool call %s %s", c.Tool, c.Args)
		}
		out.written[a.ID]++
	}
	if d := rig.tools.Duplicates(); len(d) != 0 {
		t.Errorf("%d doubled writes, the first %s %s", len(d), d[0].Tool, d[0].Args)
	}
	return out
}

// TestSwapUnderHTTPLoad is the operations issue's load test: a load
// generator on loopback posts guarded tasks, each making one write with a
// unique id through the wasm WriteGate, while WriteGate is swapped 20 times
// and rolled back twice through the admin API. Every request must be
// answered 200 with its task DONE, every id written exactly once (none
// lost, none doubled), every generation must have served calls, and every
// replaced one be retired. It logs the steady and swapping windows side by
// side; the knobs of swapEnv run it longer, or otherwise loaded, for the
// figures in docs/BENCHMARKS.md.
func TestSwapUnderHTTPLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("22 plugin generations under HTTP load: about 10 s on a shared 2-core machine")
	}
	p := swapPlan{workers: 4, swaps: 20, steady: 20, between: 10, perSession: 50, interval: 20 * time.Millisecond,
		requests: 10000, duration: 90 * time.Second}
	swapEnv(t, &p)
	swapLoad(t, p)
}

// TestColdSwapUnderHTTPLoad is TestSwapUnderHTTPLoad where every swap
// installs a module no host has compiled, so that its compile runs while
// the load does: in the host's compile worker, this test binary at the
// lowest CPU priority, writing the compiled code to the cache directory
// the serving host then loads it from. The swapping window spans the whole
// compile; the steady windows are longer than the warm test's, so that
// their p99 rests on as many requests. make test runs one swap;
// WARDEN_SWAPLOAD_SCALE runs more.
func TestColdSwapUnderHTTPLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a cold compile of a Go guest under HTTP load: about 30 s on a quiet 2-core machine")
	}
	p := swapPlan{workers: 4, swaps: 1, steady: 400, between: 10, perSession: 50, interval: 20 * time.Millisecond,
		requests: 100000, duration: 10 * time.Minute, cold: true}
	swapEnv(t, &p)
	out := swapLoad(t, p)
	if p.inProcess {
		t.Logf("compiled in the serving process (WARDEN_SWAPLOAD_WORKER=off)")
		return
	}
	if c := out.compiles; c.Worker != uint64(p.swaps) || c.WorkerFailed+c.WorkerRefused+c.Fallback != 0 {
		t.Fatalf("compiles during the load %+v, want %d in the worker, none failed, refused or in the serving process", c, p.swaps)
	}
	t.Logf("compile worker: %d compiles, %s each on average", out.compiles.Worker, (out.compiles.WorkerTime / time.Duration(out.compiles.Worker)).Round(time.Millisecond))
}

// swapLoad runs one swap-under-load test and checks and logs its figures.
func swapLoad(t *testing.T, p swapPlan) swapOutcome {
	start := time.Now()
	out := runSwapLoad(t, p)
	r := out.result

	rollbacks := p.swaps / 7
	ops := p.swaps + rollbacks
	generations := 1 + ops
	if r.Bound != loadgen.BoundStopped || r.Total.Errors != 0 || out.swaps != p.swaps || out.rollback != rollbacks {
		t.Fatalf("bound %s, %d errors, %d swaps, %d rollbacks; want stopped, 0, %d, %d", r.Bound, r.Total.Errors, out.swaps, out.rollback, p.swaps, rollbacks)
	}
	if len(out.issued) != r.Total.Requests {
		t.Fatalf("%d ids issued for %d requests", len(out.issued), r.Total.Requests)
	}
	lost, doubled := 0, 0
	for _, id := range out.issued {
		switch out.written[id] {
		case 0:
			lost++
		case 1:
		default:
			doubled++
		}
	}
	if lost != 0 || doubled != 0 || len(out.written) != len(out.issued) {
		t.Fatalf("%d ids issued, %d written: %d lost, %d doubled", len(out.issued), len(out.written), lost, doubled)
	}
	sl := out.slot
	if int(sl.Current.Number) != generations || len(sl.Generations) != generations || len(out.served) != generations {
		t.Fatalf("slot at #%d with %d generations, %d seen serving; want %d", sl.Current.Number, len(sl.Generations), len(out.served), generations)
	}
	for i, g := range sl.Generations {
		if retired := g.Retired != nil; retired != (i < generations-1) {
			t.Fatalf("generation %d: retired %v", g.Number, retired)
		}
	}

	steady, _ := r.Phase("steady")
	swapping, _ := r.Phase("swapping")
	compiling, _ := r.Phase("compiling")
	loading, _ := r.Phase("loading")
	after, _ := r.Phase("after swap")
	window := r.Merge("swap window", "swapping", "compiling", "loading", "after swap")
	// A window holds the requests its wait counted, less those still in
	// flight when the phase changed: they count where they started.
	if steady.Requests < (ops+1)*(p.steady-p.workers) || after.Requests < ops*(p.between-p.workers) {
		t.Fatalf("windows too small: steady %d, after swap %d requests", steady.Requests, after.Requests)
	}
	t.Logf("%d requests by %d workers (paced at %s), %d swaps + %d rollbacks (%d generations): 0 failed, 0 lost, 0 doubled; run %s, test %s",
		r.Total.Requests, p.workers, p.interval, out.swaps, out.rollback, generations, r.Elapsed.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	for _, s := range []loadgen.Stats{steady, swapping, compiling, loading, after, window} {
		if s.Requests > 0 {
			t.Logf("%s", s)
		}
	}
	t.Logf("added in the swap window: p50 %s, p99 %s (target p99 ≤ 10ms)", window.P50-steady.P50, window.P99-steady.P99)
	if p.cold {
		// The server's own part of a cold swap, without the compile's
		// long window around it.
		own := r.Merge("loading and after swap", "loading", "after swap")
		t.Logf("%s", own)
		t.Logf("added while the server loads and swaps: p50 %s, p99 %s", own.P50-steady.P50, own.P99-steady.P99)
	}
	var calls, started uint64
	for n := range out.served {
		calls, started = calls+out.served[n], started+out.started[n]
	}
	t.Logf("per generation: %.0f WriteGate calls, %.1f instances started (the pre-warmed one included)",
		float64(calls)/float64(generations), float64(started)/float64(generations))
	return out
}
