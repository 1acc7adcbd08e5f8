package host_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
)

// TestExtismGood checks a guard built with the extism Go PDK: it loads
// through the extism loader, passes, and rejects with its own observation.
func TestExtismGood(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	p := load(t, h, "extismgood", host.Policy{})
	if got := p.Loader(); got != "extism" {
		t.Fatalf("Loader() = %q, want extism", got)
	}
	if got := p.Ref(); got != "extismgood@1.0.0" {
		t.Fatalf("Ref() = %q", got)
	}
	for round := 0; round < 3; round++ {
		if v := p.Guard(context.Background(), "tenant-a", before(`{}`)); !v.Pass || v.Observation != nil {
			t.Fatalf("round %d: verdict %+v, want pass", round, v)
		}
		v := p.Guard(context.Background(), "tenant-a", before(`{"reject":true}`))
		if v.Pass || v.Observation == nil {
			t.Fatalf("round %d: verdict %+v, want a rejection", round, v)
		}
		o := v.Observation
		if o.Outcome != abi.OutcomeRejected || o.Code != abi.ArgRejected {
			t.Fatalf("round %d: %v %s, want REJECTED ARG_REJECTED", round, o.Outcome, o.Code)
		}
		const want = "参数 [reject] 不允许为 true。下一步：去掉 reject 后再调用"
		if got := o.Message(); got != want {
			t.Fatalf("round %d: message\n got %s\nwant %s", round, got, want)
		}
	}
	// tenant-a's pooled instance, and the spare refilled in the background
	// once tenant-a took the first.
	host.WaitSpares(p)
	if st := p.Stats(); st.InFlight != 0 || st.InstancesLive != 2 || st.InstancesIdle != 2 {
		t.Fatalf("stats: %+v", st)
	}
}

// TestExtismHostileCalls runs the failure modes of the direct hostile suite
// on extism-PDK guards: the observations must be the same, and the next call
// on the same plugin must work on a fresh instance.
func TestExtismHostileCalls(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	good := load(t, h, "extismgood", host.Policy{})
	tests := []struct {
		name    string
		code    abi.Code
		message string
	}{
		{"extismnoresult", abi.PluginContractViolation, "插件 extismnoresult@1.0.0 违反结果约定：调用结束时没有给出结果。下一步：" + reportNext},
		{"extismpanic", abi.PluginTrap, "插件 extismpanic@1.0.0 运行异常：panic: boom。下一步：" + retryNext},
		{"extismloop", abi.PluginTimeout, "插件 extismloop@1.0.0 在 200ms 内没有给出结果。下一步：" + retryNext},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := load(t, h, tt.name, fast)
			if p.Loader() != "extism" {
				t.Fatalf("Loader() = %q", p.Loader())
			}
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
			st := p.Stats()
			if st.InFlight != 0 || st.InstancesLive > 1 {
				t.Fatalf("stats after %s: %+v", tt.name, st)
			}
			_ = p.Close(context.Background())
		})
	}
}

// TestExtismBadPointer checks a guest that hands the host an offset that is
// not an extism memory block.
func TestExtismBadPointer(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	p := load(t, h, "extismbadpointer", fast)
	want := "插件 extismbadpointer@1.0.0 违反结果约定：传给宿主的内存地址越界：4294963200。下一步：" + reportNext
	for round := 0; round < 2; round++ {
		v := p.Guard(context.Background(), "", before(`{}`))
		if v.Observation == nil || v.Observation.Code != abi.PluginContractViolation || v.Observation.Message() != want {
			t.Fatalf("round %d: got %+v, want %s", round, v.Observation, want)
		}
	}
}

// TestExtismSandbox checks that an extism-PDK guest sees no files, no
// environment, no extism config, no network, and the deterministic stand-ins
// for the clock and randomness.
func TestExtismSandbox(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	data := func() map[string]any {
		p := load(t, h, "extismsandbox", host.Policy{Config: json.RawMessage(`{"key":"secret"}`)})
		defer p.Close(context.Background())
		v := p.Guard(context.Background(), "", before(`{}`))
		if v.Observation == nil || v.Observation.Outcome != abi.OutcomeSuccess {
			t.Fatalf("%+v", v)
		}
		var m map[string]any
		if err := json.Unmarshal(v.Observation.Data, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b := data(), data()
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
		t.Errorf("warden_now = %v: the host's real clock leaked", now)
	}
	if env := a["env"].([]any); len(env) != 0 {
		t.Errorf("environment leaked: %v", env)
	}
	if a["config"] != false {
		t.Errorf("extism config visible: %v", a["config"])
	}
	if a["file"] != true {
		t.Errorf("host file readable")
	}
	if r, _ := a["hostRandom"].(string); len(r) != 16 {
		t.Errorf("warden_random: %q", r)
	}

	p := load(t, h, "extismsandbox", fast)
	v := p.Guard(context.Background(), "", before(`{"http":"http://127.0.0.1:1/"}`))
	if v.Observation == nil || v.Observation.Code != abi.PluginTrap {
		t.Fatalf("http request: %+v, want PLUGIN_TRAP", v.Observation)
	}
	if !strings.Contains(v.Observation.Message(), "not allowed") {
		t.Errorf("http request: message %q", v.Observation.Message())
	}
}

// BenchmarkExtismCall measures one guard call through extism (extismgood)
// and, for comparison, the same guard through the direct ABI (good): a
// trivial pass, and a pass on a request carrying 1 KB of arguments.
func BenchmarkExtismCall(b *testing.B) {
	h := newHost(b)
	// A generous deadline: the benchmark measures calls, not timeouts.
	pol := host.Policy{Limits: abi.Limits{TimeoutMs: 30000}}
	plugins := map[string]*host.Plugin{"extism": load(b, h, "extismgood", pol), "direct": load(b, h, "good", pol)}
	ctx := context.Background()
	reqFor := func(args string) []byte {
		r := before(args)
		r.Kind, r.ABI = abi.RoleGuard, abi.Version
		raw, err := json.Marshal(r)
		if err != nil {
			b.Fatal(err)
		}
		return raw
	}
	for _, bc := range []struct{ name, args string }{
		{"pass", `{}`},
		{"args1KB", `{"pad":"` + strings.Repeat("x", 1024-10) + `"}`},
	} {
		req := reqFor(bc.args)
		for _, loader := range []string{"extism", "direct"} {
			p := plugins[loader]
			b.Run(bc.name+"/"+loader, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					v, err := p.Invoke(ctx, "", req)
					if err != nil || !v.Pass {
						b.Fatalf("%+v %v", v, err)
					}
				}
			})
		}
	}
}
