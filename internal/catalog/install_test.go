package catalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/catalog"
	"github.com/agentwarden/warden/internal/testdata"
)

func TestCheckNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		tools []string
		want  string // "" = allowed
	}{
		{"own names", []string{"unitconv_convert", "unitconv_probe"}, ""},
		{"a name containing builtin", []string{"acme_builtin_node_finish"}, ""},
		{"a first-party builtin", []string{"unitconv_convert", "builtin_node_finish"},
			"tools builtin_node_finish (a first-party builtin): a third-party builtin may not take a first-party builtin's name or prefix builtin_"},
		{"the prefix", []string{"builtin_env_weather", "builtin_x"},
			"tools builtin_env_weather (the builtin_ prefix is the first-party builtins'), builtin_x (the builtin_ prefix is the first-party builtins'): a third-party builtin may not take a first-party builtin's name or prefix builtin_"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := abi.Manifest{Name: "acme.tools", Version: "1.0.0", Role: abi.RoleBuiltin}
			for _, n := range tt.tools {
				m.Tools = append(m.Tools, spec(n, ""))
			}
			err := catalog.CheckNames(m)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want == "":
			case !errors.Is(err, catalog.ErrReservedName) || err.Error() != tt.want:
				t.Fatalf("got %v\nwant %s", err, tt.want)
			}
		})
	}
}

func TestCheckArgs(t *testing.T) {
	t.Parallel()
	m := abi.Manifest{Name: "acme.unitconv", Version: "1.2.0", Role: abi.RoleBuiltin, Tools: []abi.ToolSpec{
		{Name: "unitconv_convert", InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["value","from","to"],` +
			`"properties":{"value":{"type":"number"},"from":{"type":"string"},"to":{"type":"string"}}}`)},
		{Name: "unitconv_free"},
	}}
	tests := []struct {
		name, tool, args, text string
		locale                 abi.Locale
		code                   abi.Code // "" = passes
		message                string
	}{
		{"valid", "unitconv_convert", `{"value":10,"from":"km","to":"mi"}`, "", "", "", ""},
		{"a string for a number", "unitconv_convert", `{"value":"ten","from":"km","to":"mi"}`, "", abi.LocaleEN, abi.ArgRejected,
			"arguments do not match tool unitconv_convert: value: expected number, got string. Next: fix the fields above to match the tool definition and call again; if you cannot tell the values, ask the user with builtin_node_follow_up"},
		{"missing and extra", "unitconv_convert", `{"value":1,"unit":"km"}`, "", "", abi.ArgRejected,
			"参数不符合工具 unitconv_convert 的定义：from: required property is missing；to: required property is missing；unit: property is not allowed (additionalProperties is false)。下一步：按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户"},
		{"no arguments", "unitconv_convert", "", "", abi.LocaleEN, abi.ArgRejected,
			"arguments do not match tool unitconv_convert: value: required property is missing; from: required property is missing; to: required property is missing. Next: fix the fields above to match the tool definition and call again; if you cannot tell the values, ask the user with builtin_node_follow_up"},
		{"not JSON", "unitconv_convert", "", `{"value":10,`, abi.LocaleEN, abi.ArgJSONInvalid,
			`arguments are not valid JSON: {"value":10,. Next: fix the fields above to match the tool definition and call again; if you cannot tell the values, ask the user with builtin_node_follow_up`},
		{"a tool without a schema", "unitconv_free", `{"anything":1}`, "", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := &abi.Request{Tool: tt.tool, ArgsText: tt.text, Locale: tt.locale}
			if tt.args != "" {
				req.Args = json.RawMessage(tt.args)
			}
			v, ok := catalog.CheckArgs(m, req)
			if tt.code == "" {
				if !ok {
					t.Fatalf("refused: %+v", v.Observation)
				}
				return
			}
			if ok || v.Observation == nil || v.Observation.Outcome != abi.OutcomeRejected || v.Observation.Code != tt.code || v.Observation.Message() != tt.message {
				t.Fatalf("got %v %+v\nwant %s %q", ok, v.Observation, tt.code, tt.message)
			}
		})
	}
}

// TestInstallThirdParty installs real modules: a builtin whose tool is
// named builtin_node_finish is refused; unitconv's arguments are checked
// before its plugin runs, and only its tenant reaches it.
func TestInstallThirdParty(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, err := host.New(host.Options{CacheDir: testdata.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	pkg := func(path string) catalog.Package {
		wasm, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		m, digest, err := h.Verify(ctx, host.Source{Bytes: wasm}, host.Policy{})
		if err != nil {
			t.Fatal(err)
		}
		shipped, _ := json.Marshal(m)
		return catalog.Package{Name: m.Name, Wasm: wasm, Manifest: shipped, SHA256: digest}
	}
	_, err = catalog.Install(ctx, h, pkg(testdata.Wasm(t, "impostor")), catalog.Grant{Tenant: "acme"})
	if !errors.Is(err, catalog.ErrReservedName) || err.Error() != "catalog: install acme.impostor: tools builtin_node_finish (a first-party builtin): a third-party builtin may not take a first-party builtin's name or prefix builtin_" {
		t.Fatalf("impostor: %v", err)
	}
	path, err := testdata.Build("./examples/builtins/unitconv/cmd")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := catalog.Install(ctx, h, pkg(path), catalog.Grant{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close(ctx)
	call := func(tenant, args string) abi.Observation {
		v := inst.Builtin(ctx, tenant, &abi.Request{Tool: "unitconv_convert", Args: json.RawMessage(args), Locale: abi.LocaleEN})
		if v.Observation == nil {
			t.Fatalf("no observation: %+v", v)
		}
		return *v.Observation
	}
	if o := call("acme", `{"value":"ten","from":"km","to":"mi"}`); o.Code != abi.ArgRejected || inst.Plugin.Stats().Calls != 0 {
		t.Fatalf("\"ten\": %+v, %d plugin calls", o, inst.Plugin.Stats().Calls)
	}
	if o := call("globex", `{"value":10,"from":"km","to":"mi"}`); o.Code != abi.CatalogDenied || inst.Plugin.Stats().Calls != 0 {
		t.Fatalf("another tenant: %+v", o)
	}
	if o := call("acme", `{"value":10,"from":"km","to":"mi"}`); o.Outcome != abi.OutcomeSuccess || o.Message() != "10 km = 6.21371192237 mi" || inst.Plugin.Stats().Calls != 1 {
		t.Fatalf("10 km: %+v %q", o, o.Message())
	}
	if ref, gen := inst.Identity(); ref != "acme.unitconv@1.2.0" || gen != 0 {
		t.Fatalf("identity %s %d", ref, gen)
	}
}

// unitconvPackage is examples/builtins/unitconv as a third party ships it:
// the module built from source, the manifest.json beside it, and the
// module's digest.
func unitconvPackage(t *testing.T) catalog.Package {
	t.Helper()
	path, err := testdata.Build("./examples/builtins/unitconv/cmd")
	if err != nil {
		t.Fatal(err)
	}
	wasm, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	man, err := os.ReadFile(filepath.Join(testdata.Root(), "examples", "builtins", "unitconv", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	return catalog.Package{Name: "unitconv.wasm", Wasm: wasm, Manifest: man, SHA256: "sha256:" + host.Digest(wasm)}
}

// TestInstallPackage installs a shipped package: its pin, the manifest
// shipped beside it and the tenant's grant are each checked.
func TestInstallPackage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, err := host.New(host.Options{CacheDir: testdata.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(ctx) })
	good := unitconvPackage(t)
	tests := []struct {
		name   string
		change func(*catalog.Package, *catalog.Grant)
		err    error
	}{
		{"pinned and granted", func(*catalog.Package, *catalog.Grant) {}, nil},
		{"pin without prefix", func(p *catalog.Package, _ *catalog.Grant) { p.SHA256 = strings.TrimPrefix(p.SHA256, "sha256:") }, nil},
		{"no pin", func(p *catalog.Package, _ *catalog.Grant) { p.SHA256 = "" }, catalog.ErrPinRequired},
		{"wrong pin", func(p *catalog.Package, _ *catalog.Grant) { p.SHA256 = strings.Repeat("0", 64) }, host.ErrDigestMismatch},
		{"one byte changed", func(p *catalog.Package, _ *catalog.Grant) {
			p.Wasm = append([]byte(nil), p.Wasm...)
			p.Wasm[len(p.Wasm)-1] ^= 1
		}, host.ErrDigestMismatch},
		{"manifest asks for an ungranted capability", func(p *catalog.Package, _ *catalog.Grant) {
			p.Manifest = []byte(strings.Replace(string(p.Manifest), `"role": "builtin",`, `"role": "builtin", "capabilities": ["clock"],`, 1))
		}, catalog.ErrNotGranted},
		{"shipped manifest is not the module's", func(p *catalog.Package, _ *catalog.Grant) {
			p.Manifest = []byte(strings.Replace(string(p.Manifest), `"1.2.0"`, `"1.2.1"`, 1))
		}, catalog.ErrManifestMismatch},
		{"shipped manifest with an unknown key", func(p *catalog.Package, _ *catalog.Grant) {
			p.Manifest = []byte(strings.Replace(string(p.Manifest), `"role": "builtin",`, `"role": "builtin", "capabilites": ["clock"],`, 1))
		}, abi.ErrInvalidManifest},
		{"tenant caps the deadline below the manifest's", func(_ *catalog.Package, g *catalog.Grant) { g.Limits.TimeoutMs = 200 }, host.ErrLimits},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pkg, g := good, catalog.Grant{Tenant: "acme"}
			tt.change(&pkg, &g)
			inst, err := catalog.Install(ctx, h, pkg, g)
			if tt.err == nil {
				if err != nil {
					t.Fatal(err)
				}
				defer inst.Close(ctx)
				if inst.Plugin.Ref() != "acme.unitconv@1.2.0" || inst.Plugin.Limits().TimeoutMs != 500 {
					t.Fatalf("loaded %s with limits %+v", inst.Plugin.Ref(), inst.Plugin.Limits())
				}
				return
			}
			if !errors.Is(err, tt.err) {
				t.Fatalf("got %v, want %v", err, tt.err)
			}
		})
	}
}

// TestInstalledArgsChecked checks that an installed builtin's arguments
// are held to the tool's declared input schema before the plugin runs.
func TestInstalledArgsChecked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, err := host.New(host.Options{CacheDir: testdata.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(ctx) })
	inst, err := catalog.Install(ctx, h, unitconvPackage(t), catalog.Grant{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close(ctx)
	const fixZH = "按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户"
	tests := []struct {
		name, tool, args, want string
	}{
		{"ten km", "unitconv_convert", `{"value":"ten","from":"km","to":"mi"}`,
			"参数不符合工具 unitconv_convert 的定义：value: expected number, got string。下一步：" + fixZH},
		{"unknown probe action", "unitconv_probe", `{"action":"fork"}`,
			`参数不符合工具 unitconv_probe 的定义：action: "fork" is not one of ["readfile","dial","spin"]。下一步：` + fixZH},
	}
	for _, tt := range tests {
		o := inst.Call(ctx, &abi.Request{Tool: tt.tool, Args: json.RawMessage(tt.args)}).Observation
		if o.Outcome != abi.OutcomeRejected || o.Code != abi.ArgRejected || o.Message() != tt.want {
			t.Errorf("%s: got %v %s %q", tt.name, o.Outcome, o.Code, o.Message())
		}
	}
	if n := inst.Plugin.Stats().Calls; n != 0 {
		t.Fatalf("the plugin was called %d times", n)
	}
}
