// Package conformance is the client side of the MCP conformance suite
// (@modelcontextprotocol/conformance): for each client scenario it drives a
// tools/mcp client against the scenario's test server the way the scenario
// expects, and says whether the exchange went as the scenario describes.
//
// The suite's runner starts a scenario's server, then runs the client command
// with the server URL as its last argument and the scenario name in
// MCP_CONFORMANCE_SCENARIO; the runner grades the exchange from what its
// server saw, and a client that exits non-zero fails the scenario too.
// cmd/mcp-conformance-client is that command.
//
// Only what Warden's MCP client does is driven: connect, list tools, call
// tools, answer elicitation/create through tools/mcp's handler; the rest
// (resuming a broken stream after the server's retry delay) is tools/mcp's
// own behaviour, which the scenarios grade.
package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/tools"
	"github.com/agentwarden/warden/internal/tools/mcp"
)

// ErrScenario marks a scenario this driver does not know.
var ErrScenario = errors.New("conformance: unknown scenario")

// ErrExchange marks a server that did not answer as the scenario says it
// does.
var ErrExchange = errors.New("conformance: unexpected exchange")

// Options configure a run.
type Options struct {
	// BearerToken, when set, is sent as "Authorization: Bearer <token>" on
	// every request to the server.
	BearerToken string
	// HTTPClient carries the requests; nil is tools/mcp's default.
	HTTPClient *http.Client
}

// scenario drives one scenario over a connected client.
type scenario func(ctx context.Context, c *mcp.Client) error

// scenarios are the client scenarios this driver knows, by the suite's
// names. The auth/* scenarios are OAuth flows, which tools/mcp does not
// implement: it is given a token (Options.BearerToken), never fetches one.
var scenarios = map[string]scenario{
	// initialize: the handshake, then one request over the session.
	"initialize": func(ctx context.Context, c *mcp.Client) error {
		_, err := c.ListTools(ctx)
		return err
	},
	// tools_call: add_numbers adds a and b and says so in text.
	"tools_call": func(ctx context.Context, c *mcp.Client) error {
		return callExpect(ctx, c, "add_numbers", `{"a":5,"b":3}`, "The sum of 5 and 3 is 8")
	},
	// elicitation-sep1034-client-defaults: the tool sends elicitation/create
	// with defaults for every field; a client that accepts fills them in,
	// and the tool reports what it received.
	"elicitation-sep1034-client-defaults": func(ctx context.Context, c *mcp.Client) error {
		return callExpect(ctx, c, "test_client_elicitation_defaults", `{}`, "Elicitation completed: ")
	},
	// sse-retry: the server closes the tools/call SSE stream after a priming
	// event and answers on the GET stream the client resumes with
	// Last-Event-ID after the retry delay it was given.
	"sse-retry": func(ctx context.Context, c *mcp.Client) error {
		return callExpect(ctx, c, "test_reconnection", `{}`, "Reconnection test completed successfully")
	},
}

// Scenarios lists the scenarios Run knows, sorted.
func Scenarios() []string {
	out := make([]string, 0, len(scenarios))
	for k := range scenarios {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Run connects to the server at url, drives the scenario and closes the
// connection.
func Run(ctx context.Context, name, url string, opt Options) error {
	sc, ok := scenarios[name]
	if !ok {
		return fmt.Errorf("%w %q (known: %s)", ErrScenario, name, strings.Join(Scenarios(), ", "))
	}
	c, err := mcp.Dial(ctx, mcp.Config{
		Name: name, URL: url, HTTPClient: opt.HTTPClient, BearerToken: opt.BearerToken,
		ElicitationHandler: acceptDefaults,
	})
	if err != nil {
		return fmt.Errorf("conformance: %s: %w", name, err)
	}
	defer c.Close()
	if err := sc(ctx, c); err != nil {
		return fmt.Errorf("conformance: %s: %w", name, err)
	}
	return nil
}

// callExpect lists the tools, calls the named one, which must be listed,
// and requires a success whose text starts with want.
func callExpect(ctx context.Context, c *mcp.Client, tool, args, want string) error {
	list, err := c.ListTools(ctx)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(list, func(t tools.Tool) bool { return t.Name == tool }) {
		return fmt.Errorf("%w: tool %s is not listed", ErrExchange, tool)
	}
	res, err := c.CallTool(ctx, tool, json.RawMessage(args))
	if err != nil {
		return err
	}
	if res.IsError || !strings.HasPrefix(res.Text, want) {
		return fmt.Errorf("%w: %s answered %q (error %t), want text starting %q", ErrExchange, tool, res.Text, res.IsError, want)
	}
	return nil
}

// acceptDefaults answers elicitation/create as a user who accepts the form
// as shown: it returns no value of its own, and the SDK fills in every
// default the requested schema gives (SEP-1034). Warden itself configures
// no handler, so tools/mcp declines; the suite's scenario is about the
// client's side of an accepted form.
func acceptDefaults(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	return &sdk.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
}
