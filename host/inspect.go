package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// Info describes a plugin module as Inspect found it: what it is, what it
// imports and exports, what it declares, and what it would be allowed.
type Info struct {
	// Name is the source's name.
	Name string `json:"name"`
	// Size is the module's length in bytes.
	Size int `json:"size"`
	// SHA256 is the module's digest (hex), the value to pin it with.
	SHA256 string `json:"sha256"`
	// Loader is "direct" or "extism"; empty for a module that speaks
	// neither ABI.
	Loader string `json:"loader,omitempty"`
	// ABIVersion is the ABI the plugin speaks; 0 when it did not load.
	ABIVersion int `json:"abiVersion,omitempty"`
	// Manifest is the plugin's manifest, as the host parsed it.
	Manifest abi.Manifest `json:"manifest"`
	// Imports are the module's imported functions, "module.name", sorted.
	Imports []string `json:"imports"`
	// Exports are the module's exported function names, sorted.
	Exports []string `json:"exports"`
	// Capabilities are what the manifest asks for; a load grants them only
	// if its Policy.Capabilities holds every one.
	Capabilities []abi.Capability `json:"capabilities"`
	// Limits are the limits each call would run under with the default
	// Policy: the manifest's wishes capped by DefaultLimits.
	Limits abi.Limits `json:"limits"`
}

// Inspect reads a plugin module without running its handler: it lists the
// imports and exports, then loads the plugin under the default Policy, but
// granted what it asks for, on a throwaway Host (which verifies the digest
// pin, the module's shape, the ABI version, the manifest and the limits, and
// starts one instance) and reads its manifest. Everything it made is closed before it returns.
//
// The error wraps the sentinel of the first check that failed (ErrNotAPlugin,
// ErrABIVersion, ErrManifest, ErrImportDenied, ErrCompile, ErrLoad, …). Even
// then Info holds what was learnt before the failure: name, size, digest and,
// once the module compiled, its imports, exports and loader.
func Inspect(ctx context.Context, src Source) (Info, error) {
	info := Info{Name: src.Name, Size: len(src.Bytes), SHA256: Digest(src.Bytes), Imports: []string{}, Exports: []string{}, Capabilities: []abi.Capability{}}
	if info.Name == "" {
		info.Name = "module"
	}
	if len(src.Bytes) > 64<<20 {
		return info, fmt.Errorf("host: inspect %s: %d bytes over %d: %w", info.Name, len(src.Bytes), 64<<20, ErrModuleTooLarge)
	}
	if err := listSymbols(ctx, &info, src.Bytes); err != nil {
		return info, fmt.Errorf("host: inspect %s: %w", info.Name, err)
	}
	h, err := New(Options{})
	if err != nil {
		return info, err
	}
	defer h.Close(context.WithoutCancel(ctx))
	// The grant of whoever will load it is not known here: read what the
	// manifest asks for, on a host that is thrown away.
	p, err := h.Load(ctx, Source{Name: info.Name, Bytes: src.Bytes, SHA256: src.SHA256}, Policy{grantAsked: true})
	if err != nil {
		return info, err
	}
	defer p.Close(context.WithoutCancel(ctx))
	info.Loader = p.Loader()
	info.Manifest = p.Manifest()
	info.ABIVersion = info.Manifest.ABI
	info.Capabilities = append(info.Capabilities, info.Manifest.Capabilities...)
	info.Limits = p.Limits()
	return info, nil
}

// listSymbols compiles the module with wazero's interpreter, which validates
// it without generating code, and records its imports, exports and which
// loader its shape calls for.
func listSymbols(ctx context.Context, info *Info, bin []byte) error {
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(context.WithoutCancel(ctx))
	cm, err := rt.CompileModule(ctx, bin)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCompile, err)
	}
	defer cm.Close(context.WithoutCancel(ctx))
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		info.Imports = append(info.Imports, mod+"."+name)
	}
	slices.Sort(info.Imports)
	info.Imports = slices.Compact(info.Imports)
	for name := range cm.ExportedFunctions() {
		info.Exports = append(info.Exports, name)
	}
	slices.Sort(info.Exports)
	if importsModule(cm, extismEnvModule) {
		info.Loader = "extism"
	} else if err := checkDirectModule(cm); !errors.Is(err, ErrNotAPlugin) {
		// It exports the direct ABI, perhaps with an import Load denies.
		info.Loader = "direct"
	}
	return nil
}

// signature writes a function type as the wasm text format names its value
// types: "(i32, i32) -> (i64)", "() -> ()".
func signature(params, results []api.ValueType) string {
	return typeList(params) + " -> " + typeList(results)
}

func typeList(ts []api.ValueType) string {
	var b strings.Builder
	b.WriteByte('(')
	for i, t := range ts {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(api.ValueTypeName(t))
	}
	b.WriteByte(')')
	return b.String()
}
