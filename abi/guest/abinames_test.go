package guest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
)

// directives returns the //go:wasmimport and //go:wasmexport directives of
// the wasm build's source, each as its fields after the directive name, by
// the Go function they annotate.
func directives(t *testing.T) (imports map[string][]string, exports map[string]string) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "wasm.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	imports, exports = map[string][]string{}, map[string]string{}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Doc == nil {
			continue
		}
		for _, c := range fn.Doc.List {
			switch fields := strings.Fields(c.Text); fields[0] {
			case "//go:wasmimport":
				imports[fn.Name.Name] = fields[1:]
			case "//go:wasmexport":
				if len(fields) != 2 {
					t.Fatalf("%s: %q", fn.Name.Name, c.Text)
				}
				exports[fn.Name.Name] = fields[1]
			}
		}
	}
	return imports, exports
}

// TestWasmImportsAreTheABI holds the guest's //go:wasmimport directives,
// which must carry literal names, to the names the host registers (package
// abi): each imports a function of abi.ImportModule that abi.HostFuncs
// lists, and every one of them is imported exactly once.
func TestWasmImportsAreTheABI(t *testing.T) {
	t.Parallel()
	imports, _ := directives(t)
	var got []string
	for fn, fields := range imports {
		if len(fields) != 2 {
			t.Errorf("%s: //go:wasmimport %v: want a module and a name", fn, fields)
			continue
		}
		if fields[0] != abi.ImportModule {
			t.Errorf("%s imports from module %q, want abi.ImportModule %q", fn, fields[0], abi.ImportModule)
		}
		if !slices.Contains(abi.HostFuncs, fields[1]) {
			t.Errorf("%s imports %q, not in abi.HostFuncs", fn, fields[1])
		}
		got = append(got, fields[1])
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(abi.HostFuncs))
	if !slices.Equal(got, want) {
		t.Errorf("imported %v, abi.HostFuncs %v", got, want)
	}
}

// TestWasmExportsAreTheABI does the same for the //go:wasmexport
// directives: exactly the four exports of the direct ABI, the lean-input
// signal and the select export of a module serving several plugins.
func TestWasmExportsAreTheABI(t *testing.T) {
	t.Parallel()
	_, exports := directives(t)
	want := map[string]string{
		"exportABIVersion": abi.ExportABIVersion,
		"exportManifest":   abi.ExportManifest,
		"exportInput":      abi.ExportInput,
		"exportHandle":     abi.ExportHandle,
		"exportSelect":     abi.ExportSelect,
		"exportLeanInput":  abi.ExportLeanInput,
	}
	if len(exports) != len(want) {
		t.Errorf("exports %v, want %v", exports, want)
	}
	for fn, name := range want {
		if exports[fn] != name {
			t.Errorf("%s is exported as %q, want %q", fn, exports[fn], name)
		}
	}
}
