package host_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/testdata"
)

// stepClock advances by step at every read, so each call of a plugin is
// charged exactly step: the host reads it once when the call has its
// instance and once when the guest returned.
type stepClock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration
}

func (c *stepClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(c.step)
	return c.t
}

func (c *stepClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestPluginTimeBudget: with 1ms of plugin time a second and a burst of
// 1ms, a tenant's first call (charged 2ms) overdraws the bucket and its
// next one is not started: a guard fails as its policy says for an
// unavailable guard, a builtin as FAILED PLUGIN_UNAVAILABLE, both with a
// retry. Another tenant is not held up, and the bucket refills with time.
func TestPluginTimeBudget(t *testing.T) {
	t.Parallel()
	const detail = "the tenant has used its plugin time (1ms a second, burst 1ms); more is there in 999ms"
	guardReq := func() *abi.Request { return before(`{}`) }
	builtinReq := func() *abi.Request {
		return &abi.Request{Tool: "builtin_env_current_datetime", Args: json.RawMessage(`{}`)}
	}
	tests := []struct {
		name    string
		load    func(t *testing.T, h *host.Host) *host.Plugin
		builtin bool
		req     func() *abi.Request
		outcome abi.Outcome
		code    abi.Code
		message string // "" with pass
	}{
		{"guard", func(t *testing.T, h *host.Host) *host.Plugin { return load(t, h, "good", host.Policy{}) }, false, guardReq,
			abi.OutcomeRejected, abi.GuardUnavailable, "守卫 good@1.0.0 不可用：" + detail + "。下一步：" + retryNext},
		{"guard failing open", func(t *testing.T, h *host.Host) *host.Plugin {
			return load(t, h, "good", host.Policy{Failure: host.FailOpen})
		}, false, guardReq, 0, "", ""},
		{"builtin", func(t *testing.T, h *host.Host) *host.Plugin {
			return loadPkg(t, h, "./plugins/builtins/env/cmd", host.Policy{Capabilities: firstPartyGrant["./plugins/builtins/env/cmd"]})
		}, true, builtinReq,
			abi.OutcomeFailed, abi.PluginUnavailable, "插件 builtin.env@1.0.0 不可用：" + detail + "。下一步：" + retryNext},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, err := host.New(host.Options{CacheDir: testdata.CacheDir(t), PluginTime: time.Millisecond, PluginBurst: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = h.Close(context.Background()) })
			clk := &stepClock{t: time.Unix(1_700_000_000, 0), step: 2 * time.Millisecond}
			host.SetPluginTimeClock(h, clk.now)
			p := tt.load(t, h)
			call := func(tenant string) abi.Verdict {
				if tt.builtin {
					return p.Builtin(context.Background(), tenant, tt.req())
				}
				return p.Guard(context.Background(), tenant, tt.req())
			}
			ok := func(what string, v abi.Verdict) {
				t.Helper()
				if tt.builtin && (v.Observation == nil || v.Observation.Outcome != abi.OutcomeSuccess) || !tt.builtin && !v.Pass {
					t.Fatalf("%s: %+v, want it served", what, v)
				}
			}
			ok("first call", call("acme"))
			v := call("acme")
			if tt.message == "" {
				if !v.Pass || v.Observation != nil {
					t.Fatalf("second call: %+v, want a pass", v)
				}
			} else {
				o := v.Observation
				if v.Pass || o == nil || o.Outcome != tt.outcome || o.Code != tt.code {
					t.Fatalf("second call: %+v, want %v %s", v, tt.outcome, tt.code)
				}
				if got := o.Message(); got != tt.message {
					t.Fatalf("message\n got %s\nwant %s", got, tt.message)
				}
			}
			ok("another tenant", call("globex"))
			clk.advance(2 * time.Second)
			ok("after the refill", call("acme"))
			if got := h.PluginTimeRefused(); got["acme"] != 1 || got["globex"] != 0 {
				t.Errorf("PluginTimeRefused = %v, want acme 1, globex 0", got)
			}
			if st := p.Stats(); st.Unavailable != 1 || st.InFlight != 0 {
				t.Errorf("stats: Unavailable %d, InFlight %d; want 1, 0", st.Unavailable, st.InFlight)
			}
		})
	}
}

// TestPluginTimeBudgetSpansPlugins: the budget is the tenant's across the
// host's plugins, and a call refused by it gets no instance.
func TestPluginTimeBudgetSpansPlugins(t *testing.T) {
	t.Parallel()
	h, err := host.New(host.Options{CacheDir: testdata.CacheDir(t), PluginTime: time.Millisecond, PluginBurst: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	host.SetPluginTimeClock(h, (&stepClock{t: time.Unix(1_700_000_000, 0), step: 2 * time.Millisecond}).now)
	a := load(t, h, "good", host.Policy{})
	b := load(t, h, "goodv2", host.Policy{})
	if v := a.Guard(context.Background(), "acme", before(`{}`)); !v.Pass {
		t.Fatalf("first call: %+v", v)
	}
	created := b.Stats().InstancesCreated
	v := b.Guard(context.Background(), "acme", before(`{}`))
	if o := v.Observation; o == nil || o.Code != abi.GuardUnavailable || !strings.Contains(o.Message(), "plugin time") {
		t.Fatalf("other plugin, same tenant: %+v, want GUARD_UNAVAILABLE for its plugin time", v)
	}
	if st := b.Stats(); st.InstancesCreated != created || st.Calls != 0 {
		t.Fatalf("a refused call started something: %+v", st)
	}
}

// TestPluginTimeOptions: negative times are refused at New.
func TestPluginTimeOptions(t *testing.T) {
	t.Parallel()
	for _, o := range []host.Options{{PluginTime: -time.Second}, {PluginTime: time.Second, PluginBurst: -1}} {
		if _, err := host.New(o); err == nil || !strings.Contains(err.Error(), "negative") {
			t.Errorf("New(%v, %v): err = %v, want it negative", o.PluginTime, o.PluginBurst, err)
		}
	}
}
