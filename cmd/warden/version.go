package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"runtime"

	"github.com/agentwarden/warden/internal/telemetry"
)

const versionUsage = `usage: warden version [--json]   (or warden --version)

Prints the binary's version, the VCS revision and time it was built from
(dirty: the work tree had changes), and the Go version that built it.
  --json   print them as one JSON object
`

// cmdVersion prints warden's build information.
func cmdVersion(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	asJSON := fs.Bool("json", false, "")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fmt.Fprint(stdout, versionUsage)
			return 0
		}
		fmt.Fprintf(stderr, "warden version: %v\n\n%s", err, versionUsage)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "warden version: unexpected argument %q\n\n%s", fs.Arg(0), versionUsage)
		return 2
	}
	b := telemetry.ReadBuild()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(b)
		return 0
	}
	fmt.Fprintln(stdout, versionLine(b, runtime.GOOS+"/"+runtime.GOARCH))
	return 0
}

// versionLine is the one line `warden --version` prints:
//
//	warden v1.2.0 (0123456789ab, 2026-12-01T16:40:00Z, dirty) go1.26.0 linux/amd64
func versionLine(b telemetry.Build, platform string) string {
	vcs := ""
	if b.Revision != "" {
		rev := b.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		vcs = rev
		if b.Time != "" {
			vcs += ", " + b.Time
		}
		if b.Dirty {
			vcs += ", dirty"
		}
		vcs = " (" + vcs + ")"
	}
	return fmt.Sprintf("warden %s%s %s %s", b.Version, vcs, b.GoVersion, platform)
}
