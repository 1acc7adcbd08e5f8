// Command warden runs agents whose tool calls pass sandboxed WebAssembly guards.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/agentwarden/warden/host"
)

func main() {
	if worker, code := host.CompileWorkerMain(); worker {
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage: warden <command> [arguments]

commands:
  run [--json] [--native] FILE...  run scenario files and check their expectations
  serve --skills DIR --keys FILE --model … --tools …  serve the HTTP API
  skill validate PATH    validate a skill_contract file or a skill-store directory
  skill import DIR       upload a skill-store directory's skills to a serving warden
  plugin new guard|builtin NAME [DIR]  scaffold a plugin module outside the repository
  plugin build DIR       build a plugin's main package into a wasm reactor
  plugin inspect FILE    show a plugin's ABI version, manifest, capabilities, imports and digest
  plugin test FILE       run the conformance checks and the author's cases (--cases) against a plugin
  report tools [--json] FILE...  summarise feedback records per tool and category
  sessions list|show|new|send …      a serving warden's sessions (--server URL --key KEY; warden sessions --help)
  tasks show|trace|watch|follow-up|verify|resume …  a task: status, trace, live events, answers
  approvals list|show|confirm|reject|cancel …       held writes
  plugins list|show|install|delete …                the tenant's guard and builtin modules
  skills list|show|put|delete|import …              the tenant's skills (skill import DIR: the same)
  slots list|show|install|rollback …                first-party plugin slots (admin key)
  instances list         instances and their leases (admin key)
  version [--json]       version, VCS revision, Go version (also --version)
`

// run dispatches a command line and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return cmdRun(ctx, args[1:], stdout, stderr)
	case "serve":
		return cmdServe(ctx, args[1:], stdout, stderr)
	case "skill":
		return cmdSkill(ctx, args[1:], stdout, stderr)
	case "plugin":
		return cmdPlugin(ctx, args[1:], stdout, stderr)
	case "report":
		return cmdReport(ctx, args[1:], stdout, stderr)
	case "sessions", "tasks", "approvals", "slots", "plugins", "skills", "instances":
		return cmdClient(ctx, args[0], args[1:], stdout, stderr)
	case "version", "--version":
		return cmdVersion(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "warden: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
