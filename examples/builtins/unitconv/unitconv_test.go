package unitconv_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/examples/builtins/unitconv"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/host/plugintest"
)

const (
	fixZH  = "按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户"
	failZH = "调用 builtin_node_fail 说明原因"
)

// module is the plugin as a third party ships it: the module built from
// source, pinned to its digest.
func module(t *testing.T) host.Source {
	t.Helper()
	wasm := plugintest.Module(t, "./cmd")
	return host.Source{Name: "unitconv.wasm", Bytes: wasm, SHA256: host.Digest(wasm)}
}

func newHost(t *testing.T) *host.Host {
	t.Helper()
	h, err := host.New(host.Options{CacheDir: plugintest.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h
}

// TestShippedManifest keeps manifest.json in step with the source.
func TestShippedManifest(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := abi.ParseManifest(b)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(m)
	want, _ := json.Marshal(unitconv.Plugin.Manifest)
	if string(got) != string(want) {
		t.Fatalf("manifest.json is stale; regenerate it from unitconv.Plugin.Manifest:\n got %s\nwant %s", got, want)
	}
}

// load loads the module with nothing granted, as a tenant's install does.
func load(t *testing.T) *host.Plugin {
	t.Helper()
	p, err := newHost(t).Load(context.Background(), module(t), host.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	if p.Ref() != "acme.unitconv@1.2.0" || p.Limits().TimeoutMs != 500 {
		t.Fatalf("loaded %s with limits %+v", p.Ref(), p.Limits())
	}
	return p
}

var convertCases = []struct {
	name, args string
	locale     abi.Locale
	outcome    abi.Outcome
	code       abi.Code
	message    string
}{
	{"km to mi", `{"value":42.195,"from":"km","to":"mi"}`, "", abi.OutcomeSuccess, "", "42.195 km = 26.2187574565 mi"},
	{"arguments not JSON", `{"value":42.195,"from":"km"`, abi.LocaleEN, abi.OutcomeRejected, abi.ArgJSONInvalid,
		`arguments are not valid JSON: line 1, column 28: unexpected end of JSON input; the arguments there read: {"value":42.195,"from":"km". Next: fix the fields above to match the tool definition and call again; if you cannot tell the values, ask the user with builtin_node_follow_up`},
	{"F to C", `{"value":98.6,"from":"F","to":"C"}`, "", abi.OutcomeSuccess, "", "98.6 F = 37 C"},
	{"lb to kg", `{"value":1,"from":"lb","to":"kg"}`, "", abi.OutcomeSuccess, "", "1 lb = 0.45359237 kg"},
	{"unknown unit", `{"value":1,"from":"parsec","to":"m"}`, "", abi.OutcomeRejected, abi.ArgRejected,
		"参数不符合工具 unitconv_convert 的定义：from：未知单位，可用 C F K cm ft g gal in kg km l lb m mg mi ml mm oz t yd。下一步：" + fixZH},
	{"different kinds en", `{"value":1,"from":"m","to":"kg"}`, abi.LocaleEN, abi.OutcomeRejected, abi.ArgRejected,
		"arguments do not match tool unitconv_convert: to: cannot convert length to mass. Next: fix the fields above to match the tool definition and call again; if you cannot tell the values, ask the user with builtin_node_follow_up"},
	{"value as text", `{"value":"1","from":"m","to":"cm"}`, "", abi.OutcomeRejected, abi.ArgRejected,
		"参数不符合工具 unitconv_convert 的定义：value：应为数字。下一步：" + fixZH},
}

// TestConvert runs every case natively and in wasm, requiring the exact
// observation from both and byte-identical verdicts. The wasm module is
// called directly, past the argument check Installed.Call makes first
// (TestArgsChecked), so that both builds decide every case themselves.
func TestConvert(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := load(t)
	for _, tc := range convertCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := abi.Request{ABI: abi.Version, Kind: abi.RoleBuiltin, Tool: unitconv.ToolConvert, Args: json.RawMessage(tc.args), Locale: tc.locale}
			if !json.Valid([]byte(tc.args)) {
				req.Args, req.ArgsText = nil, tc.args
			}
			n, err := guest.NewNative(unitconv.Plugin, 0)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := json.Marshal(req)
			nv, err := n.Call(ctx, body)
			if err != nil {
				t.Fatal(err)
			}
			nv.Observation.Locale = tc.locale
			wv := p.Builtin(ctx, "acme", &req)
			for build, v := range map[string]abi.Verdict{"native": nv, "wasm": wv} {
				o := v.Observation
				if o.Outcome != tc.outcome || o.Code != tc.code || o.Message() != tc.message {
					t.Fatalf("%s: got %v %s %q\nwant %v %s %q", build, o.Outcome, o.Code, o.Message(), tc.outcome, tc.code, tc.message)
				}
			}
			nj, _ := json.Marshal(nv)
			wj, _ := json.Marshal(wv)
			if string(nj) != string(wj) {
				t.Fatalf("native and wasm differ:\nnative %s\nwasm   %s", nj, wj)
			}
		})
	}
}

func probe(ctx context.Context, p *host.Plugin, action, target string) *abi.Observation {
	args, _ := json.Marshal(map[string]string{"action": action, "target": target})
	return p.Builtin(ctx, "acme", &abi.Request{Tool: unitconv.ToolProbe, Args: args}).Observation
}

// TestSandbox proves what the installed builtin cannot do.
func TestSandbox(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := load(t)

	t.Run("cannot read files", func(t *testing.T) {
		t.Parallel()
		secret := filepath.Join(t.TempDir(), "secret.txt")
		if err := os.WriteFile(secret, []byte("tenant secret"), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{secret, "/etc/hostname", "manifest.json"} {
			o := probe(ctx, p, "readfile", path)
			if o.Outcome != abi.OutcomeFailed || o.Code != abi.ToolIOError {
				t.Fatalf("%s: got %v %s %q", path, o.Outcome, o.Code, o.Message())
			}
			if !strings.HasPrefix(o.Message(), "调用工具 unitconv_probe 时发生 IO 异常：open "+path+": ") ||
				!strings.HasSuffix(o.Message(), "。下一步："+failZH) {
				t.Fatalf("%s: message %q", path, o.Message())
			}
		}
	})

	t.Run("cannot open sockets", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		arrived := make(chan net.Conn, 1)
		go func() {
			if c, err := ln.Accept(); err == nil {
				arrived <- c
			}
		}()
		addr := ln.Addr().String()
		o := probe(ctx, p, "dial", addr)
		want := "工具 " + addr + " 不可达。下一步：" + failZH
		if o.Outcome != abi.OutcomeFailed || o.Code != abi.ToolUnreachable || o.Message() != want {
			t.Fatalf("got %v %s %q, want FAILED TOOL_UNREACHABLE %q", o.Outcome, o.Code, o.Message(), want)
		}
		select {
		case c := <-arrived:
			c.Close()
			t.Fatal("a connection from the guest reached the host's listener")
		case <-time.After(200 * time.Millisecond):
		}
	})

	t.Run("cannot run past its deadline", func(t *testing.T) {
		t.Parallel()
		start := time.Now()
		o := probe(ctx, p, "spin", "")
		want := "插件 acme.unitconv@1.2.0 在 500ms 内没有给出结果。下一步：稍后重试一次；仍失败时调用 builtin_node_fail 说明原因"
		if o.Outcome != abi.OutcomeFailed || o.Code != abi.PluginTimeout || o.Message() != want {
			t.Fatalf("got %v %s %q, want FAILED PLUGIN_TIMEOUT %q", o.Outcome, o.Code, o.Message(), want)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("the spinning call took %v", d)
		}
		// The timed-out instance was dropped; the next call gets a fresh one.
		args := json.RawMessage(`{"value":1,"from":"m","to":"cm"}`)
		if o := p.Builtin(ctx, "acme", &abi.Request{Tool: unitconv.ToolConvert, Args: args}).Observation; o.Message() != "1 m = 100 cm" {
			t.Fatalf("after the timeout: %q", o.Message())
		}
	})

	t.Run("unknown probe action", func(t *testing.T) {
		t.Parallel()
		args, _ := json.Marshal(map[string]string{"action": "fork"})
		o := p.Builtin(ctx, "acme", &abi.Request{Tool: unitconv.ToolProbe, Args: args}).Observation
		want := "参数不符合工具 unitconv_probe 的定义：action：应为 readfile、dial、spin 之一。下一步：" + fixZH
		if o.Outcome != abi.OutcomeRejected || o.Code != abi.ArgRejected || o.Message() != want {
			t.Fatalf("got %v %s %q", o.Outcome, o.Code, o.Message())
		}
	})
}

// TestConformance runs the plugintest kit on the pinned module.
func TestConformance(t *testing.T) {
	t.Parallel()
	mod := module(t)
	plugintest.Run(t, mod.Bytes, plugintest.Options{
		Name: "unitconv", SHA256: mod.SHA256,
		Host: host.Options{CacheDir: plugintest.CacheDir(t)},
		Cases: []plugintest.Case{
			{Name: "convert", Request: abi.Request{Tool: unitconv.ToolConvert, Args: json.RawMessage(`{"value":1,"from":"km","to":"m"}`)},
				Want: plugintest.WantOutcome(abi.OutcomeSuccess, "")},
			{Name: "probe", Request: abi.Request{Tool: unitconv.ToolProbe, Args: json.RawMessage(`{"action":"readfile","target":"/etc/passwd"}`)},
				Want: plugintest.WantOutcome(abi.OutcomeFailed, abi.ToolIOError)},
		},
	})
}
