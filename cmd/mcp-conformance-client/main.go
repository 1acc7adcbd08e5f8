// Command mcp-conformance-client is Warden's MCP client under the MCP
// conformance suite's client runner:
//
//	conformance client --command "mcp-conformance-client" --scenario initialize
//
// The runner appends the scenario server's URL as the last argument and names
// the scenario in MCP_CONFORMANCE_SCENARIO. -scenario overrides the variable;
// -bearer-token-env names a variable holding a token sent as
// "Authorization: Bearer …". The exit status is 0 when the exchange went as
// the scenario describes, 1 when it did not, 2 on a usage error.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/agentwarden/warden/internal/conformance"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcp-conformance-client", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenario := fs.String("scenario", getenv("MCP_CONFORMANCE_SCENARIO"), "the scenario to drive (default $MCP_CONFORMANCE_SCENARIO)")
	tokenEnv := fs.String("bearer-token-env", "", "send the token held by this environment variable as a bearer token")
	timeout := fs.Duration("timeout", 25*time.Second, "give up after this long")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: mcp-conformance-client [-scenario NAME] [-bearer-token-env VAR] [-timeout D] URL")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 || *scenario == "" {
		fs.Usage()
		return 2
	}
	var opt conformance.Options
	if *tokenEnv != "" {
		if opt.BearerToken = getenv(*tokenEnv); opt.BearerToken == "" {
			fmt.Fprintf(stderr, "mcp-conformance-client: -bearer-token-env: %s is empty\n", *tokenEnv)
			return 2
		}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := conformance.Run(ctx, *scenario, fs.Arg(0), opt); err != nil {
		fmt.Fprintln(stderr, "mcp-conformance-client:", err)
		return 1
	}
	return 0
}
