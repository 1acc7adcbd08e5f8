package host_test

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/testdata"
)

// TestInspect checks what Inspect reports for good plugins of both loaders
// and for the modules that fail at load: exact manifest, exports, imports,
// limits and, for the failures, the sentinel and message.
func TestInspect(t *testing.T) {
	t.Parallel()
	directExports := []string{"warden_abi_version", "warden_handle", "warden_input", "warden_manifest"}
	tests := []struct {
		name     string
		src      func(t *testing.T) []byte
		loader   string
		manifest abi.Manifest
		exports  []string
		// imports lists every import for the wat fixtures; for Go modules it
		// lists the Warden ones and the rest must be WASI.
		imports []string
		exact   bool
		limits  abi.Limits
		err     error
		message string
	}{
		{
			name: "argcheck", src: inspectArgcheck, loader: "direct",
			manifest: abi.Manifest{Name: "argcheck", Version: "1.0.0", ABI: 1, Role: abi.RoleGuard,
				Description: "checks arguments against the tool's input schema", Phases: []abi.Phase{abi.PhaseBefore}},
			// A guest built with abi/guest also exports warden_select.
			exports: []string{"_initialize", "warden_abi_version", "warden_handle", "warden_input", "warden_lean_input", "warden_manifest", "warden_select"},
			imports: []string{"warden.deferred", "warden.failed", "warden.pass", "warden.query", "warden.rejected", "warden.validate"},
			limits:  host.DefaultLimits,
		},
		{
			name: "extismgood", src: inspectGo("extismgood"), loader: "extism",
			manifest: abi.Manifest{Name: "extismgood", Version: "1.0.0", ABI: 1, Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore, abi.PhaseAfter}},
			exports:  []string{"_initialize", "warden_handle", "warden_manifest"},
			imports: []string{"extism:host/env.alloc", "extism:host/env.error_set", "extism:host/env.input_length",
				"extism:host/env.input_load_u64", "extism:host/env.input_load_u8", "extism:host/env.output_set",
				"extism:host/env.store_u64", "extism:host/env.store_u8", "extism:host/user.warden_pass", "extism:host/user.warden_rejected"},
			limits: host.DefaultLimits,
		},
		{
			name: "badpointer", src: inspectWAT("badpointer"), loader: "direct",
			manifest: abi.Manifest{Name: "badpointer", Version: "1.0.0", ABI: 1, Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
			exports:  directExports, imports: []string{"warden.success"}, exact: true,
			limits: host.DefaultLimits,
		},
		{
			name: "notaplugin", src: inspectWAT("notaplugin"), loader: "",
			exports: []string{"hello"}, imports: []string{}, exact: true,
			err: host.ErrNotAPlugin, message: "host: load notaplugin: host: export warden_", // map order picks the export
		},
		{
			name: "wrongabi", src: inspectWAT("wrongabi"), loader: "direct",
			exports: directExports, imports: []string{}, exact: true,
			err: host.ErrABIVersion, message: "host: load wrongabi: unsupported ABI version: plugin speaks ABI 99, host speaks 1",
		},
		{
			name: "badimport", src: inspectWAT("badimport"), loader: "direct",
			exports: directExports, imports: []string{"env.socket_connect"}, exact: true,
			err: host.ErrImportDenied, message: "host: load badimport: host: imports [env.socket_connect]: module imports a function the host does not provide",
		},
		{
			name: "bigmemory", src: inspectWAT("bigmemory"), loader: "direct",
			exports: directExports, imports: []string{}, exact: true,
			err: host.ErrCompile, message: "host: compile bigmemory: module does not compile: section memory: min 2000 pages (125 Mi) over limit of 1024 pages (64 Mi)",
		},
		{
			name: "garbage", src: func(*testing.T) []byte { return []byte("not wasm at all") },
			imports: []string{}, exports: []string{}, exact: true,
			err: host.ErrCompile, message: "host: inspect garbage: module does not compile: ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			bin := tt.src(t)
			info, err := host.Inspect(context.Background(), host.Source{Name: tt.name, Bytes: bin})
			if tt.err != nil {
				if !errors.Is(err, tt.err) || !strings.HasPrefix(err.Error(), tt.message) {
					t.Fatalf("err = %v\nwant %v with prefix %q", err, tt.err, tt.message)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if info.Name != tt.name || info.Size != len(bin) || info.SHA256 != host.Digest(bin) {
				t.Errorf("name, size, sha256 = %q, %d, %s", info.Name, info.Size, info.SHA256)
			}
			if info.Loader != tt.loader {
				t.Errorf("Loader = %q, want %q", info.Loader, tt.loader)
			}
			wantABI := 0
			if tt.err == nil {
				wantABI = abi.Version
			}
			if info.ABIVersion != wantABI {
				t.Errorf("ABIVersion = %d, want %d", info.ABIVersion, wantABI)
			}
			if !reflect.DeepEqual(info.Manifest, tt.manifest) {
				t.Errorf("Manifest = %+v\nwant %+v", info.Manifest, tt.manifest)
			}
			if !reflect.DeepEqual(info.Exports, tt.exports) {
				t.Errorf("Exports = %v, want %v", info.Exports, tt.exports)
			}
			imports := info.Imports
			if !tt.exact {
				imports = nil
				for _, im := range info.Imports {
					if !strings.HasPrefix(im, "wasi_snapshot_preview1.") {
						imports = append(imports, im)
					}
				}
				if len(imports) == len(info.Imports) {
					t.Errorf("no WASI imports in %v", info.Imports)
				}
			}
			if !reflect.DeepEqual(imports, tt.imports) {
				t.Errorf("Imports = %v, want %v", imports, tt.imports)
			}
			if len(info.Capabilities) != 0 {
				t.Errorf("Capabilities = %v, want none", info.Capabilities)
			}
			if info.Limits != tt.limits {
				t.Errorf("Limits = %+v, want %+v", info.Limits, tt.limits)
			}
		})
	}
}

// TestInspectPin checks that Inspect honours the source's digest pin.
func TestInspectPin(t *testing.T) {
	t.Parallel()
	bin := testdata.WAT(t, "badpointer")
	if _, err := host.Inspect(context.Background(), host.Source{Name: "pinned", Bytes: bin, SHA256: "sha256:" + host.Digest(bin)}); err != nil {
		t.Fatalf("right pin: %v", err)
	}
	info, err := host.Inspect(context.Background(), host.Source{Name: "pinned", Bytes: bin, SHA256: strings.Repeat("0", 64)})
	if !errors.Is(err, host.ErrDigestMismatch) {
		t.Fatalf("wrong pin: err = %v, want %v", err, host.ErrDigestMismatch)
	}
	if info.SHA256 != host.Digest(bin) || len(info.Exports) != 4 {
		t.Errorf("partial info: %+v", info)
	}
}

func inspectArgcheck(t *testing.T) []byte {
	p, err := testdata.Build("./examples/guards/argcheck/cmd")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func inspectGo(name string) func(t *testing.T) []byte {
	return func(t *testing.T) []byte { return testdata.Bytes(t, name) }
}

func inspectWAT(name string) func(t *testing.T) []byte {
	return func(t *testing.T) []byte { return testdata.WAT(t, name) }
}

// TestExportSignatureMessage: a wrong export signature is reported in the
// wasm text format's type names, not as raw type codes.
func TestExportSignatureMessage(t *testing.T) {
	t.Parallel()
	bin := testdata.Bytes(t, "badsignature")
	const want = "host: load badsignature: host: export warden_handle has signature (i64, f64) -> (i32), want (i32) -> (): module is not a warden plugin"
	_, err := newHost(t).Load(context.Background(), host.Source{Name: "badsignature", Bytes: bin}, host.Policy{})
	if !errors.Is(err, host.ErrNotAPlugin) || err.Error() != want {
		t.Fatalf("Load: %v\nwant %s", err, want)
	}
	info, err := host.Inspect(context.Background(), host.Source{Name: "badsignature", Bytes: bin})
	if !errors.Is(err, host.ErrNotAPlugin) || err.Error() != want {
		t.Fatalf("Inspect: %v\nwant %s", err, want)
	}
	if info.Loader != "" {
		t.Errorf("Loader = %q, want none", info.Loader)
	}
}
