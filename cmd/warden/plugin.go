package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/host/plugintest"
)

const pluginUsage = `usage:
  warden plugin inspect [--json] FILE
  warden plugin test [--json] [--timeout-ms N] [--capabilities LIST] FILE
  warden plugin build DIR [-o FILE]

inspect  loads FILE (a .wasm plugin) without calling its handler and prints
         its ABI version, loader, manifest, the capabilities it asks for,
         the error codes it declares, limits under the default policy,
         imports, size and sha256.
test     runs the conformance kit (host/plugintest): the probes a slot's
         load check sends every candidate (empty, non-object, unparsable,
         deeply nested, wide, unicode-edge and non-UTF-8 arguments, an
         unknown tool, a request of exactly the input limit, a big
         after-phase result), each again in reverse order on the same
         instance and from two goroutines at once, under the real limits;
         it prints each check, and the exit code is 1 when one fails.
         --capabilities a,b,… grants only those (as a slot or a tenant's
         allow-list does): a module asking for more fails to load, naming
         what it asked for beyond them; without it the module gets what
         it asks for.
build    builds the Go plugin main package in DIR for wasip1 as a reactor
         and prints the module's path and sha256 (default output:
         DIR's name + ".wasm", or its parent's when DIR is named cmd).

Exit codes: 0 success, 1 a failed plugin or build, 2 usage errors.
`

// cmdPlugin handles `warden plugin ...`.
func cmdPlugin(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, pluginUsage)
		return 2
	}
	switch args[0] {
	case "inspect":
		return pluginInspect(ctx, args[1:], stdout, stderr)
	case "test":
		return pluginTest(ctx, args[1:], stdout, stderr)
	case "build":
		return pluginBuild(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, pluginUsage)
		return 0
	default:
		fmt.Fprintf(stderr, "warden plugin: unknown command %q\n\n%s", args[0], pluginUsage)
		return 2
	}
}

// parseFlags parses flags placed before or after the positional arguments
// and returns the positionals, or an exit code when parsing stopped.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) ([]string, int, bool) {
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, pluginUsage) }
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, 0, false
			}
			return nil, 2, false
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, 0, true
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func pluginInspect(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("warden plugin inspect", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print machine-readable JSON")
	pos, code, ok := parseFlags(fs, args, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprint(stderr, pluginUsage)
		return 2
	}
	src, err := host.ReadSource(pos[0], "")
	if err != nil {
		fmt.Fprintf(stderr, "warden plugin inspect: %v\n", err)
		return 1
	}
	info, err := host.Inspect(ctx, src)
	if err != nil {
		fmt.Fprintf(stderr, "warden plugin inspect: %v\n", err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(info); err != nil {
			fmt.Fprintf(stderr, "warden plugin inspect: %v\n", err)
			return 1
		}
		return 0
	}
	writeInfo(stdout, info)
	return 0
}

func writeInfo(w io.Writer, info host.Info) {
	m := info.Manifest
	line := func(k, v string) { fmt.Fprintf(w, "%-13s %s\n", k, v) }
	line("file", info.Name)
	line("abi", fmt.Sprint(info.ABIVersion))
	line("loader", info.Loader)
	line("name", m.Name)
	line("version", m.Version)
	line("role", string(m.Role))
	if m.Description != "" {
		line("description", m.Description)
	}
	if m.Role == abi.RoleGuard {
		phases := make([]string, len(m.Phases))
		for i, p := range m.Phases {
			phases[i] = string(p)
		}
		line("phases", strings.Join(phases, ", "))
	}
	if m.Role == abi.RoleBuiltin {
		for _, t := range m.Tools {
			line("tool", t.Name+": "+t.Description)
		}
	}
	caps := make([]string, len(info.Capabilities))
	for i, c := range info.Capabilities {
		caps[i] = string(c)
	}
	line("capabilities", orNone(strings.Join(caps, ", ")))
	for _, c := range m.Codes {
		line("code", fmt.Sprintf("%s (%s): %s; next: %s", abi.PluginCode(m.Name, c.Name), c.Outcome, c.Reason.EN, c.Next.EN))
	}
	l := info.Limits
	line("limits", fmt.Sprintf("timeout %dms, memory %d pages, input %d bytes, output %d bytes",
		l.TimeoutMs, l.MemoryPages, l.MaxInputBytes, l.MaxOutputBytes))
	line("imports", orNone(strings.Join(info.Imports, ", ")))
	line("exports", orNone(strings.Join(info.Exports, ", ")))
	line("size", fmt.Sprintf("%d bytes", info.Size))
	line("sha256", info.SHA256)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func pluginTest(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("warden plugin test", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print machine-readable JSON")
	timeout := fs.Int("timeout-ms", 0, "cap each call's deadline in milliseconds (0: the host default)")
	grant := abi.AllCapabilities()
	fs.Func("capabilities", "grant only these capabilities (comma-separated; empty grants none)", func(v string) error {
		grant = []abi.Capability{}
		for _, s := range strings.Split(v, ",") {
			c := abi.Capability(strings.TrimSpace(s))
			switch {
			case c == "":
				continue
			case !c.Known():
				return fmt.Errorf("unknown capability %q", c)
			}
			grant = append(grant, c)
		}
		return nil
	})
	pos, code, ok := parseFlags(fs, args, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 || *timeout < 0 {
		fmt.Fprint(stderr, pluginUsage)
		return 2
	}
	wasm, err := os.ReadFile(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "warden plugin test: %v\n", err)
		return 1
	}
	rep := plugintest.Check(ctx, wasm, plugintest.Options{
		Name:   pos[0],
		Policy: host.Policy{Limits: abi.Limits{TimeoutMs: *timeout}, Capabilities: grant},
	})
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			plugintest.Report
			OK bool `json:"ok"`
		}{rep, rep.OK()}); err != nil {
			fmt.Fprintf(stderr, "warden plugin test: %v\n", err)
			return 1
		}
	} else {
		fmt.Fprintf(stdout, "plugin %s (%s, sha256 %s)\n", rep.Plugin, orNone(rep.Loader), rep.SHA256)
		fmt.Fprint(stdout, rep.String())
		fmt.Fprintf(stdout, "%d of %d checks passed\n", len(rep.Checks)-len(rep.Failed()), len(rep.Checks))
	}
	if !rep.OK() {
		return 1
	}
	return 0
}

func pluginBuild(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("warden plugin build", flag.ContinueOnError)
	out := fs.String("o", "", "write the module to `FILE`")
	pos, code, ok := parseFlags(fs, args, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprint(stderr, pluginUsage)
		return 2
	}
	dir, err := filepath.Abs(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "warden plugin build: %v\n", err)
		return 1
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		fmt.Fprintf(stderr, "warden plugin build: %s is not a directory\n", pos[0])
		return 1
	}
	target := *out
	if target == "" {
		name := filepath.Base(dir)
		if name == "cmd" || name == "wasm" {
			name = filepath.Base(filepath.Dir(dir))
		}
		target = name + ".wasm"
	}
	if target, err = filepath.Abs(target); err != nil {
		fmt.Fprintf(stderr, "warden plugin build: %v\n", err)
		return 1
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-buildmode=c-shared", "-trimpath", "-o", target, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	var buildErr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buildErr, &buildErr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(stderr, "warden plugin build: go build: %v\n%s", err, buildErr.String())
		return 1
	}
	wasm, err := os.ReadFile(target)
	if err != nil {
		fmt.Fprintf(stderr, "warden plugin build: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s\nsha256 %s\n", target, host.Digest(wasm))
	return 0
}
