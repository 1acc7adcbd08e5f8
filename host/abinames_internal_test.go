package host

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/tetratelabs/wazero"
)

// TestHostRegistersTheABI checks that the host registers exactly the
// functions package abi names (which the guest SDK's imports are held to,
// abi/guest's TestWasmImportsAreTheABI): module abi.ImportModule with
// abi.HostFuncs, and abi.ExtismUserModule's abi.ExtismHostFuncs.
func TestHostRegistersTheABI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	if err := instantiateDirectHost(ctx, rt); err != nil {
		t.Fatal(err)
	}
	m := rt.Module(abi.ImportModule)
	if m == nil {
		t.Fatalf("no module %q", abi.ImportModule)
	}
	got := slices.Sorted(maps.Keys(m.ExportedFunctionDefinitions()))
	want := slices.Sorted(slices.Values(abi.HostFuncs))
	if !slices.Equal(got, want) {
		t.Errorf("module %q exports %v, abi.HostFuncs %v", abi.ImportModule, got, want)
	}

	var ext []string
	for _, f := range extismHostFuncs {
		ext = append(ext, f.Name)
	}
	slices.Sort(ext)
	if want := slices.Sorted(slices.Values(abi.ExtismHostFuncs)); !slices.Equal(ext, want) {
		t.Errorf("extism host functions %v, abi.ExtismHostFuncs %v", ext, want)
	}
}
