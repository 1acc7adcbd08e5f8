package firstparty

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/plugins"
)

// asks is what the first-party plugin's manifest asks for, which its slot
// grants.
func asks(p Plugin) []abi.Capability {
	for _, pl := range plugins.All {
		if pl.File == p.Name {
			return pl.Plugin.Manifest.Capabilities
		}
	}
	return nil
}

// BenchmarkModules builds the first-party modules from this tree (the one
// module serving every first-party plugin) and, when WARDEN_BENCH_BASE
// names another source tree of the module (make bench unpacks BENCH_BASE
// there), that tree's module of each plugin, in one run; then prints each
// module's size, its cold load time (rewrite, compile with no compilation
// cache, one instance started) and one instance's linear memory side by
// side, with the totals
// and this tree's share per plugin served. Last, this tree's module is
// loaded for every first-party slot on one host, as warden does: one
// compilation, then an instance per slot.
func BenchmarkModules(b *testing.B) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		b.Skip("no go command")
	}
	ctx := context.Background()
	type figure struct {
		name string
		size int64
		load time.Duration
		mem  int64 // one instance's linear memory
	}
	// cold loads each module of dir on a host of its own, with an empty,
	// in-memory compilation cache.
	cold := func(tree, dir string, ps []Plugin, bind func([]byte, Plugin) []byte) []figure {
		var out []figure
		for _, p := range ps {
			bin, err := os.ReadFile(filepath.Join(dir, p.Name+".wasm"))
			if err != nil {
				b.Fatal(err)
			}
			h, err := host.New(host.Options{})
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			// Granted what it asks for: the load compiles the module and
			// starts one instance.
			src := host.Source{Name: p.Name + ".wasm", Bytes: bind(bin, p)}
			pl, err := h.Load(ctx, src, host.Policy{Capabilities: asks(p)})
			if err != nil {
				b.Fatalf("%s %s: %v", tree, p.Name, err)
			}
			out = append(out, figure{p.Name, int64(len(bin)), time.Since(start), pl.Stats().InstanceMemoryBytes})
			_ = h.Close(ctx)
		}
		return out
	}
	var out strings.Builder
	fmt.Fprintf(&out, "  %-22s %11s %10s %11s\n", "module", "size", "cold load", "instance")
	row := func(f figure) {
		fmt.Fprintf(&out, "  %-22s %8.2f MB %10v %8.1f MB\n", f.name, float64(f.size)/1e6, f.load.Round(time.Millisecond), float64(f.mem)/1e6)
	}
	total := func(name string, fs []figure) figure {
		t := figure{name: name}
		for _, f := range fs {
			t.size += f.size
			t.load += f.load
			t.mem += f.mem
		}
		return t
	}
	var baseTotal figure
	if base := os.Getenv("WARDEN_BENCH_BASE"); base != "" {
		dir := b.TempDir()
		if err := buildAll(ctx, goCmd, base, dir, Plugins); err != nil {
			b.Fatalf("base: %v", err)
		}
		figs := cold("base", dir, Plugins, func(bin []byte, _ Plugin) []byte { return bin })
		out.WriteString("base: a module per plugin\n")
		for _, f := range figs {
			row(f)
		}
		baseTotal = total(fmt.Sprintf("all %d", len(figs)), figs)
		row(baseTotal)
	}
	dir := b.TempDir()
	if err := buildAll(ctx, goCmd, findSource(), dir, []Plugin{Module}); err != nil {
		b.Fatalf("this tree: %v", err)
	}
	// The module bound to its first plugin: a slot's load.
	figs := cold("this tree", dir, []Plugin{Module}, func(bin []byte, _ Plugin) []byte { return host.SelectPlugin(bin, Plugins[0].Selects) })
	fmt.Fprintf(&out, "this tree: one module serving %d plugins\n", len(Plugins))
	row(figs[0])
	share := figure{"per plugin served", figs[0].size / int64(len(Plugins)), figs[0].load / time.Duration(len(Plugins)), 0}
	row(share)
	if baseTotal.size > 0 {
		fmt.Fprintf(&out, "  ratio to base, all plugins: size %.2f, cold load %.2f\n",
			float64(figs[0].size)/float64(baseTotal.size), float64(figs[0].load)/float64(baseTotal.load))
	}
	// Every slot on one host: the first load compiles, the others start
	// an instance of the same compilation.
	bin, err := os.ReadFile(filepath.Join(dir, Module.Name+".wasm"))
	if err != nil {
		b.Fatal(err)
	}
	h, err := host.New(host.Options{})
	if err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(&out, "this tree: every slot on one host (cold)\n")
	var all figure
	for _, p := range Plugins {
		start := time.Now()
		pl, err := h.Load(ctx, host.Source{Name: p.Name, Bytes: host.SelectPlugin(bin, p.Selects)}, host.Policy{Capabilities: asks(p)})
		if err != nil {
			b.Fatalf("slot %s: %v", p.Name, err)
		}
		f := figure{p.Name, 0, time.Since(start), pl.Stats().InstanceMemoryBytes}
		all.load += f.load
		all.mem += f.mem
		fmt.Fprintf(&out, "  %-22s %11s %10v %8.1f MB\n", f.name, "", f.load.Round(time.Millisecond), float64(f.mem)/1e6)
	}
	fmt.Fprintf(&out, "  %-22s %11s %10v %8.1f MB\n", "all slots", "", all.load.Round(time.Millisecond), float64(all.mem)/1e6)
	_ = h.Close(ctx)
	for b.Loop() { // the figures above are the benchmark
	}
	fmt.Print(out.String())
}
