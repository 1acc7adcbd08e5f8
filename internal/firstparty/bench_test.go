package firstparty

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/host"
)

// BenchmarkModules builds every first-party module from this tree and, when
// WARDEN_BENCH_BASE names another source tree of the module (make bench
// unpacks BENCH_BASE there), from that one too, in one run; then prints each
// module's size and its cold load time (rewrite, compile with no
// compilation cache, one instance started) side by side.
func BenchmarkModules(b *testing.B) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		b.Skip("no go command")
	}
	trees := []struct{ name, root string }{{"this tree", findSource()}}
	if base := os.Getenv("WARDEN_BENCH_BASE"); base != "" {
		trees = append([]struct{ name, root string }{{"base", base}}, trees...)
	}
	ctx := context.Background()
	type figure struct {
		size int64
		load time.Duration
	}
	got := make([]map[string]figure, len(trees))
	for i, t := range trees {
		dir := b.TempDir()
		if err := buildAll(ctx, goCmd, t.root, dir); err != nil {
			b.Fatalf("%s: %v", t.name, err)
		}
		got[i] = map[string]figure{}
		for _, p := range Plugins {
			path := filepath.Join(dir, p.Name+".wasm")
			fi, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			src, err := host.ReadSource(path, "")
			if err != nil {
				b.Fatal(err)
			}
			h, err := host.New(host.Options{}) // an empty, in-memory compilation cache
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			// Nothing is granted: the load compiles and starts the module,
			// then refuses the capabilities it asks for.
			if _, err := h.Load(ctx, src, host.Policy{}); err != nil && !errors.Is(err, host.ErrNotGranted) {
				b.Fatalf("%s %s: %v", t.name, p.Name, err)
			}
			got[i][p.Name] = figure{fi.Size(), time.Since(start)}
			_ = h.Close(ctx)
		}
	}
	for b.Loop() { // the figures above are the benchmark
	}
	var out strings.Builder
	fmt.Fprintf(&out, "%-18s", "module")
	for _, t := range trees {
		fmt.Fprintf(&out, " %14s %12s", t.name+" size", "load")
	}
	out.WriteString("\n")
	for _, p := range Plugins {
		fmt.Fprintf(&out, "%-18s", p.Name)
		for i := range trees {
			f := got[i][p.Name]
			fmt.Fprintf(&out, " %12.2fMB %12v", float64(f.size)/1e6, f.load.Round(time.Millisecond))
		}
		out.WriteString("\n")
	}
	fmt.Print(out.String())
}
