package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/testdata"
)

func newHost(t testing.TB) *host.Host {
	t.Helper()
	h, err := host.New(host.Options{CacheDir: testdata.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h
}

func load(t testing.TB, h *host.Host, name string, pol host.Policy) *host.Plugin {
	t.Helper()
	p, err := h.Load(context.Background(), host.Source{Name: name, Bytes: testdata.Bytes(t, name)}, pol)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return p
}

func before(args string) *abi.Request {
	return &abi.Request{Phase: abi.PhaseBefore, Tool: "create_site", Args: json.RawMessage(args)}
}

// fast limits keep the hostile suite quick: a short deadline and a small heap.
var fast = host.Policy{Limits: abi.Limits{TimeoutMs: 200, MemoryPages: 512}}

const retryNext = "稍后重试一次；仍失败时调用 builtin_node_fail 说明原因"
const reportNext = "调用 builtin_node_fail 说明该插件不可用"

// TestHostileCalls runs every failure mode that shows during a call and
// checks the exact observation, then that the same plugin and a good one
// still serve their next call.
func TestHostileCalls(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	good := load(t, h, "good", host.Policy{})
	tests := []struct {
		name    string
		pol     host.Policy
		code    abi.Code
		message string
	}{
		{"loop", fast, abi.PluginTimeout, "插件 loop@1.0.0 在 200ms 内没有给出结果。下一步：" + retryNext},
		{"membomb", host.Policy{Limits: abi.Limits{TimeoutMs: 5000, MemoryPages: 128}}, abi.PluginMemoryLimit, "插件 membomb@1.0.0 超出内存上限。下一步：" + reportNext},
		{"panichandler", fast, abi.PluginTrap, "插件 panichandler@1.0.0 运行异常：panic: boom。下一步：" + retryNext},
		{"noresult", fast, abi.PluginContractViolation, "插件 noresult@1.0.0 违反结果约定：调用结束时没有给出结果。下一步：" + reportNext},
		{"tworesults", fast, abi.PluginContractViolation, "插件 tworesults@1.0.0 违反结果约定：一次调用给出了第二个结果。下一步：" + reportNext},
		{"nonext", fast, abi.PluginContractViolation, "插件 nonext@1.0.0 违反结果约定：非成功结果缺少下一步：ARG_REJECTED。下一步：" + reportNext},
		{"unknowncode", fast, abi.PluginContractViolation, "插件 unknowncode@1.0.0 违反结果约定：非成功结果的错误码未登记：NOT_A_CODE。下一步：" + reportNext},
		{"ungranted", fast, abi.PluginContractViolation, "插件 ungranted@1.0.0 违反结果约定：请求了未被授予的效果：ledger.reserve。下一步：" + reportNext},
		{"bigoutput", fast, abi.PluginOutputTooLarge, "插件 bigoutput@1.0.0 的输出超过 1048576 字节。下一步：" + reportNext},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := load(t, h, tt.name, tt.pol)
			for round := 0; round < 2; round++ { // the second call runs on a fresh instance
				v := p.Guard(context.Background(), "tenant-a", before(`{}`))
				if v.Pass || v.Observation == nil {
					t.Fatalf("round %d: verdict %+v, want a rejection", round, v)
				}
				o := v.Observation
				if o.Outcome != abi.OutcomeRejected || o.Code != tt.code {
					t.Fatalf("round %d: %v %s, want REJECTED %s", round, o.Outcome, o.Code, tt.code)
				}
				if got := o.Message(); got != tt.message {
					t.Fatalf("round %d: message\n got %s\nwant %s", round, got, tt.message)
				}
			}
			if v := good.Guard(context.Background(), "tenant-a", before(`{}`)); !v.Pass {
				t.Fatalf("good plugin after %s: %+v", tt.name, v)
			}
			// tenant-a's pooled instance, and the spare refilled in the
			// background once tenant-a took the first.
			st := p.Stats()
			if st.InFlight != 0 || st.InstancesLive > 2 {
				t.Fatalf("stats after %s: %+v", tt.name, st)
			}
			_ = p.Close(context.Background())
		})
	}
}

// TestBadPointer checks a guest that hands the host an out-of-bounds pointer.
func TestBadPointer(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	p, err := h.Load(context.Background(), host.Source{Name: "badpointer", Bytes: testdata.WAT(t, "badpointer")}, host.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	v := p.Guard(context.Background(), "", before(`{}`))
	want := "插件 badpointer@1.0.0 违反结果约定：传给宿主的内存地址越界：4294963200+1000。下一步：" + reportNext
	if v.Observation == nil || v.Observation.Message() != want {
		t.Fatalf("got %+v, want %s", v, want)
	}
}

// TestHostileLoads checks the failure modes that must stop a plugin at load.
func TestHostileLoads(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	tests := []struct {
		name    string
		src     func(t *testing.T) host.Source
		pol     host.Policy
		err     error
		message string
	}{
		{"panicstart", goSource("panicstart", ""), host.Policy{}, host.ErrLoad, "host: load panicstart: start: plugin failed to start: panic: broken at start"},
		{"slowstart", goSource("slowstart", ""), host.Policy{LoadTimeout: 300e6}, host.ErrLoad, "host: load slowstart: start: plugin failed to start: did not start within the load deadline of 300ms"},
		{"notaplugin", watSource("notaplugin"), host.Policy{}, host.ErrNotAPlugin, "host: load notaplugin: host: export "},
		{"command", func(t *testing.T) host.Source { return host.Source{Bytes: testdata.Command(t, "command")} }, host.Policy{}, host.ErrCommandModule,
			"host: load command: host: it exports _start and not _initialize: module is built as a command, not a reactor; " +
				"build it with `GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o plugin.wasm ./cmd` (or `warden plugin build DIR`)"},
		{"extism command", func(t *testing.T) host.Source { return host.Source{Bytes: testdata.Command(t, "extismgood")} }, host.Policy{}, host.ErrCommandModule,
			"host: load extism command: host: it exports _start and not _initialize: module is built as a command, not a reactor; build it with `GOOS=wasip1"},
		{"badimport", watSource("badimport"), host.Policy{}, host.ErrImportDenied, "host: load badimport: host: imports [env.socket_connect]: module imports a function the host does not provide"},
		{"wrongabi", watSource("wrongabi"), host.Policy{}, host.ErrABIVersion, "host: load wrongabi: unsupported ABI version: plugin speaks ABI 99, host speaks 1"},
		{"bigmemory", watSource("bigmemory"), host.Policy{}, host.ErrCompile, "host: compile bigmemory: module does not compile: section memory: min 2000 pages (125 Mi) over limit of 1024 pages (64 Mi)"},
		{"digest", goSource("good", "sha256:0000000000000000000000000000000000000000000000000000000000000000"), host.Policy{}, host.ErrDigestMismatch, "host: load digest: sha256 "},
		{"bad config", goSource("good", ""), host.Policy{Config: json.RawMessage(`[1]`)}, host.ErrConfig, "host: load bad config: config is not a JSON object: plugin config rejected"},
		{"config missing", goSource("configured", ""), host.Policy{}, host.ErrConfig, "host: load config missing: config: limit: required property is missing: plugin config rejected"},
		{"config wrong", goSource("configured", ""), host.Policy{Config: json.RawMessage(`{"limit":0,"x":1}`)}, host.ErrConfig,
			"host: load config wrong: config: limit: 0 is less than the minimum 1; x: property is not allowed (additionalProperties is false): plugin config rejected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := tt.src(t)
			src.Name = tt.name
			_, err := h.Load(context.Background(), src, tt.pol)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if !strings.HasPrefix(err.Error(), tt.message) {
				t.Fatalf("err\n got %s\nwant prefix %s", err, tt.message)
			}
		})
	}
}

func goSource(name, pin string) func(t *testing.T) host.Source {
	return func(t *testing.T) host.Source { return host.Source{Bytes: testdata.Bytes(t, name), SHA256: pin} }
}

func watSource(name string) func(t *testing.T) host.Source {
	return func(t *testing.T) host.Source { return host.Source{Bytes: testdata.WAT(t, name)} }
}

// TestConfig checks that a plugin receives its validated config.
func TestConfig(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	p := load(t, h, "configured", host.Policy{Config: json.RawMessage(`{"limit":100}`)})
	if v := p.Guard(context.Background(), "", before(`{"amount":50}`)); !v.Pass {
		t.Fatalf("under the limit: %+v", v)
	}
	v := p.Guard(context.Background(), "", before(`{"amount":500}`))
	if v.Observation == nil || v.Observation.Message() != "金额超过上限。下一步：降低金额后再调用" {
		t.Fatalf("over the limit: %+v", v)
	}
}

// TestVerify checks a module without its config, as an install does.
func TestVerify(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	m, digest, err := h.Verify(context.Background(), host.Source{Name: "configured", Bytes: testdata.Bytes(t, "configured")}, host.Policy{})
	if err != nil || m.Name != "configured" || digest != host.Digest(testdata.Bytes(t, "configured")) {
		t.Fatalf("verify: %v %s %s", err, m.Name, digest)
	}
	if _, _, err := h.Verify(context.Background(), host.Source{Name: "wrongabi", Bytes: testdata.WAT(t, "wrongabi")}, host.Policy{}); !errors.Is(err, host.ErrABIVersion) {
		t.Fatalf("verify wrongabi: %v", err)
	}
}

// TestSandbox checks that a plugin sees no files, no network, no
// environment, and deterministic stand-ins for the clock and randomness.
func TestSandbox(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	data := func(name string) map[string]any {
		p := load(t, h, name, host.Policy{})
		defer p.Close(context.Background())
		v := p.Guard(context.Background(), "", before(`{}`))
		if v.Observation == nil || v.Observation.Outcome != abi.OutcomeSuccess {
			t.Fatalf("%s: %+v", name, v)
		}
		var m map[string]any
		if err := json.Unmarshal(v.Observation.Data, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	t.Run("files", func(t *testing.T) {
		for k, v := range data("openfile") {
			if s, _ := v.(string); s == "" {
				t.Errorf("%s: read succeeded, want an error", k)
			}
		}
	})
	t.Run("network", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		accepted := make(chan struct{}, 1)
		go func() {
			if c, err := ln.Accept(); err == nil {
				accepted <- struct{}{}
				c.Close()
			}
		}()
		p := load(t, h, "socket", host.Policy{})
		defer p.Close(context.Background())
		v := p.Guard(context.Background(), "", before(`{"addr":"`+ln.Addr().String()+`"}`))
		if v.Observation == nil || v.Observation.Outcome != abi.OutcomeSuccess {
			t.Fatalf("%+v", v)
		}
		var m map[string]string
		if err := json.Unmarshal(v.Observation.Data, &m); err != nil {
			t.Fatal(err)
		}
		if m["dial"] == "" || m["lookup"] == "" {
			t.Errorf("network reachable from the plugin: %v", m)
		}
		select {
		case <-accepted:
			t.Error("the plugin connected to a host socket")
		case <-time.After(100 * time.Millisecond):
		}
	})
	t.Run("clock env random", func(t *testing.T) {
		a, b := data("sysinfo"), data("sysinfo")
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Fatalf("two fresh instances differ:\n%s\n%s", ja, jb)
		}
		const year2023 = 1672531200e9
		if now := a["now"].(float64); now >= year2023 {
			t.Errorf("time.Now() = %v: the host's real clock leaked", now)
		}
		if now := a["hostNow"].(float64); now >= year2023 {
			t.Errorf("warden.now = %v: the host's real clock leaked", now)
		}
		if env := a["env"].([]any); len(env) != 0 {
			t.Errorf("environment leaked: %v", env)
		}
	})
}

// TestHammer runs 10,000 mixed hostile and good calls from several
// goroutines and checks that pools and heap return to their baseline.
func TestHammer(t *testing.T) {
	if testing.Short() {
		t.Skip("hammer")
	}
	h := newHost(t)
	// Deadlines are generous except for the looping guest: two cores serve
	// eight callers, and a starved call must not be mistaken for a timeout.
	pol := host.Policy{Limits: abi.Limits{TimeoutMs: 5000, MemoryPages: 512}, PoolSize: 2}
	plugins := map[string]*host.Plugin{}
	for _, n := range []string{"good", "panichandler", "noresult", "tworesults", "loop"} {
		p := pol
		if n == "loop" {
			p.Limits.TimeoutMs = 50
		}
		plugins[n] = load(t, h, n, p)
	}
	tenants := []string{"a", "b"}
	// warm every pool, then take the baseline
	for _, p := range plugins {
		for _, tn := range tenants {
			p.Guard(context.Background(), tn, before(`{}`))
		}
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	base := heap()
	const workers, calls = 8, 10000
	var wg sync.WaitGroup
	var bad sync.Map
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < calls; i += workers {
				name := "good"
				switch {
				case i%100 == 7:
					name = "loop"
				case i%20 == 3:
					name = "panichandler"
				case i%20 == 5:
					name = "noresult"
				case i%20 == 9:
					name = "tworesults"
				}
				reject := i%2 == 0
				args := `{"reject":false}`
				if reject {
					args = `{"reject":true}`
				}
				v := plugins[name].Guard(context.Background(), tenants[i%2], before(args))
				ok := false
				switch name {
				case "good":
					ok = v.Pass != reject && (v.Pass || v.Observation.Code == abi.ArgRejected)
				case "loop":
					ok = v.Observation != nil && v.Observation.Code == abi.PluginTimeout
				case "panichandler":
					ok = v.Observation != nil && v.Observation.Code == abi.PluginTrap
				default:
					ok = v.Observation != nil && v.Observation.Code == abi.PluginContractViolation
				}
				if !ok {
					bad.Store(name, v)
				}
			}
		}(w)
	}
	wg.Wait()
	bad.Range(func(k, v any) bool {
		if vv, ok := v.(abi.Verdict); ok && vv.Observation != nil {
			t.Errorf("%s: unexpected verdict %s %s", k, vv.Observation.Code, vv.Observation.Message())
		} else {
			t.Errorf("%s: unexpected verdict %+v", k, v)
		}
		return true
	})
	for n, p := range plugins {
		st := p.Stats()
		// Each tenant's pool, plus the plugin's one spare, which a tenant
		// that took it has refilled in the background.
		if st.InFlight != 0 || st.InstancesLive > int64(pol.PoolSize*len(tenants)+1) ||
			st.InstancesCreated-st.InstancesClosed != uint64(st.InstancesLive) || st.InstancesIdle != int(st.InstancesLive) {
			t.Errorf("%s: pool did not return to baseline: %+v", n, st)
		}
	}
	if after := heap(); after > base+32<<20 {
		t.Errorf("heap grew from %d to %d bytes", base, after)
	}
}
