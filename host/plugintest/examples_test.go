package plugintest_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// promised are the Warden packages a plugin author may import
// (docs/PLUGINS.md, "What authors are promised").
var promised = map[string]bool{
	"github.com/agentwarden/warden/abi":             true,
	"github.com/agentwarden/warden/abi/guest":       true,
	"github.com/agentwarden/warden/host":            true,
	"github.com/agentwarden/warden/host/plugintest": true,
}

// TestExamplesImportOnlyPromised: every Go file of the example plugins,
// their tests included, imports no Warden package beyond the promised ones
// (and the example's own), so an author outside the repository can copy
// any of them.
func TestExamplesImportOnlyPromised(t *testing.T) {
	t.Parallel()
	const warden = "github.com/agentwarden/warden/"
	files := 0
	for _, dir := range []string{"../../examples/guards", "../../examples/builtins", "../../examples/extism-guard"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			files++
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if strings.HasPrefix(p, warden) && !promised[p] && !strings.HasPrefix(p, warden+"examples/") {
					t.Errorf("%s imports %s, which plugin authors are not promised", path, p)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 10 {
		t.Fatalf("only %d example files found", files)
	}
}
