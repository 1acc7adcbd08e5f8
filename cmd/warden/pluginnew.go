package main

import (
	"bytes"
	"context"
	"embed"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"text/template"
)

//go:embed scaffold/*.tmpl
var scaffoldFS embed.FS

var scaffold = template.Must(template.ParseFS(scaffoldFS, "scaffold/*.tmpl"))

// scaffoldData fills the templates.
type scaffoldData struct {
	Role    string // guard or builtin
	Name    string // the manifest's name
	Pkg     string // the Go package name
	File    string // the rule's file, without .go
	Tool    string // a builtin's tool
	Module  string // the module path
	Replace string // the warden checkout, or ""
}

// pluginNameRE is a manifest name that is also a file and directory name;
// a builtin's is its tool's name too, so no dot.
var (
	guardNameRE   = regexp.MustCompile(`^[a-z][a-z0-9_.-]{0,63}$`)
	builtinNameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)
)

// modulePathRE is what a module path may be made of.
var modulePathRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._~/-]*$`)

// wardenModule is the module path plugins import.
const wardenModule = "github.com/agentwarden/warden"

func pluginNew(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("warden plugin new", flag.ContinueOnError)
	module := fs.String("module", "", "the new module's `PATH` (default: NAME)")
	replace := fs.String("warden-replace", "", "build against the Warden checkout in `DIR` (a go.mod replace; the module is not published)")
	pos, code, ok := parseFlags(fs, args, stderr)
	if !ok {
		return code
	}
	if len(pos) < 2 || len(pos) > 3 {
		fmt.Fprint(stderr, pluginUsage)
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "warden plugin new: "+format+"\n", a...)
		return 1
	}
	role, name := pos[0], pos[1]
	switch role {
	case "guard":
		if !guardNameRE.MatchString(name) {
			return fail("name %q: want 1-64 of [a-z0-9_.-], starting with a letter", name)
		}
	case "builtin":
		if !builtinNameRE.MatchString(name) {
			return fail("name %q: want 1-64 of [a-z0-9_-], starting with a letter (it is the tool's name too)", name)
		}
		if strings.HasPrefix(name, "builtin_") {
			return fail("name %q: the builtin_ prefix is the runtime's own", name)
		}
	default:
		fmt.Fprintf(stderr, "warden plugin new: %q is not guard or builtin\n\n%s", role, pluginUsage)
		return 2
	}
	dir := name
	if len(pos) == 3 {
		dir = pos[2]
	}
	d := scaffoldData{Role: role, Name: name, Tool: name, Module: *module}
	d.Pkg = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, name)
	d.File = strings.ReplaceAll(name, ".", "_")
	if d.Module == "" {
		d.Module = name
	}
	if !modulePathRE.MatchString(d.Module) || strings.Contains(d.Module, "//") || strings.HasSuffix(d.Module, "/") {
		return fail("module path %q: want a Go module path such as example.com/%s", d.Module, name)
	}
	if *replace != "" {
		abs, err := wardenCheckout(*replace)
		if err != nil {
			return fail("%v", err)
		}
		d.Replace = abs
		if strings.ContainsAny(abs, " \t\"'`\\") {
			d.Replace = strconv.Quote(abs) // go.mod quotes such a path
		}
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fail("%s exists and is not empty", dir)
	} else if err != nil && !os.IsNotExist(err) {
		return fail("%v", err)
	}
	if err := writeScaffold(dir, role, d, stdout); err != nil {
		return fail("%v", err)
	}
	if d.Replace == "" {
		fmt.Fprintf(stdout, "%s is not published: add a replace to a checkout (or run again with --warden-replace DIR), then go mod tidy in %s\n", wardenModule, dir)
		return 0
	}
	// Fill go.sum, so that the module builds as generated.
	tidy := exec.CommandContext(ctx, "go", "mod", "tidy")
	tidy.Dir = dir
	var log bytes.Buffer
	tidy.Stdout, tidy.Stderr = &log, &log
	if err := tidy.Run(); err != nil {
		return fail("go mod tidy in %s: %v\n%s", dir, err, log.String())
	}
	fmt.Fprintln(stdout, filepath.Join(dir, "go.sum"))
	return 0
}

// writeScaffold writes a new plugin's files into dir, naming each on stdout.
func writeScaffold(dir, role string, d scaffoldData, stdout io.Writer) error {
	files := []struct{ path, tmpl string }{
		{"go.mod", "go.mod.tmpl"},
		{d.File + ".go", role + ".go.tmpl"},
		{d.File + "_test.go", "test.go.tmpl"},
		{filepath.Join("cmd", "main.go"), "main.go.tmpl"},
		{"cases.yaml", role + ".cases.tmpl"},
		{"README.md", "README.md.tmpl"},
	}
	for _, f := range files {
		var b bytes.Buffer
		if err := scaffold.ExecuteTemplate(&b, f.tmpl, d); err != nil {
			return err
		}
		p := filepath.Join(dir, f.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			return err
		}
		fmt.Fprintln(stdout, p)
	}
	return nil
}

// wardenCheckout returns the absolute path of dir after checking that it
// is a checkout of the Warden module.
func wardenCheckout(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(abs, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("--warden-replace %s: not a Warden checkout: %w", dir, err)
	}
	if p := modulePath(b); p != wardenModule {
		return "", fmt.Errorf("--warden-replace %s: its go.mod is module %q, not %s", dir, p, wardenModule)
	}
	return abs, nil
}

// modulePath returns the path of a go.mod's module directive.
func modulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}
