// Command mcp-cms is an example MCP server: a small CMS of spaces, websites
// and articles with read and write tools and fault flags, so Warden's loop can
// be exercised against every failure a business tool can show. It speaks MCP
// over stdio by default and over streamable HTTP with -http. See README.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mcp-cms:", err)
		os.Exit(1)
	}
}

func run(argv []string) error {
	fs := flag.NewFlagSet("mcp-cms", flag.ContinueOnError)
	addr := fs.String("http", "", "serve streamable HTTP at this address (e.g. :8080) instead of stdio")
	pageSize := fs.Int("page-size", 0, "tools/list page size (0: the SDK default)")
	var fc faultConfig
	var err error
	if fc, err = faultsFromEnv(); err != nil {
		return err
	}
	fs.DurationVar(&fc.Delay, "delay", fc.Delay, "delay every business tool call (env MCP_CMS_DELAY)")
	fs.IntVar(&fc.FailNext, "fail-next", fc.FailNext, "fail the next N business tool calls (env MCP_CMS_FAIL_NEXT)")
	fs.StringVar(&fc.FailMode, "fail-mode", fc.FailMode, "how -fail-next fails: business|iserror|rpc|invalid|timeout|crash (env MCP_CMS_FAIL_MODE)")
	fs.IntVar(&fc.CommitTimeoutNext, "commit-timeout-next", fc.CommitTimeoutNext, "apply the next N calls, then never answer (env MCP_CMS_COMMIT_TIMEOUT_NEXT)")
	fs.StringVar(&fc.Tool, "fault-tool", fc.Tool, "limit the faults to this tool (env MCP_CMS_FAULT_TOOL)")
	if err := fs.Parse(argv); err != nil {
		return err
	}
	if err := fc.validate(); err != nil {
		return err
	}
	cms := &cms{store: newStore(), faults: newFaults(fc)}
	srv := cms.server(*pageSize)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *addr == "" {
		return srv.Run(ctx, &sdk.StdioTransport{})
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(os.Stderr, "mcp-cms: listening on http://%s/mcp\n", ln.Addr())
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func faultsFromEnv() (faultConfig, error) {
	var fc faultConfig
	var err error
	if v := os.Getenv("MCP_CMS_DELAY"); v != "" {
		if fc.Delay, err = time.ParseDuration(v); err != nil {
			return fc, fmt.Errorf("MCP_CMS_DELAY: %w", err)
		}
	}
	for name, dst := range map[string]*int{"MCP_CMS_FAIL_NEXT": &fc.FailNext, "MCP_CMS_COMMIT_TIMEOUT_NEXT": &fc.CommitTimeoutNext} {
		if v := os.Getenv(name); v != "" {
			if *dst, err = strconv.Atoi(v); err != nil {
				return fc, fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	fc.FailMode = os.Getenv("MCP_CMS_FAIL_MODE")
	fc.Tool = os.Getenv("MCP_CMS_FAULT_TOOL")
	return fc, nil
}

// cms is the server's state: the data and the armed faults.
type cms struct {
	store  *store
	faults *faults
}

func (c *cms) server(pageSize int) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "mcp-cms", Version: "0.1.0"}, &sdk.ServerOptions{PageSize: pageSize})
	for _, t := range cmsTools {
		srv.AddTool(&sdk.Tool{
			Name: t.name, Title: t.title, Description: t.desc,
			InputSchema:  inputSchema(t.fields),
			OutputSchema: outputSchema(t.data),
			Annotations:  &sdk.ToolAnnotations{Title: t.title, ReadOnlyHint: !t.write},
		}, c.handler(t))
	}
	c.addAdmin(srv)
	return srv
}

// envelope is the body of every business response.
type envelope struct {
	Code int    `json:"code"`
	Msg  string `json:"msg"`
	Data any    `json:"data"`
}

func result(e envelope) *sdk.CallToolResult {
	b, _ := json.Marshal(e)
	return &sdk.CallToolResult{
		Content:           []sdk.Content{&sdk.TextContent{Text: string(b)}},
		StructuredContent: json.RawMessage(b),
	}
}

func toolError(msg string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: msg}}, IsError: true}
}

func (c *cms) handler(t toolDef) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		a, err := parseArgs(t.fields, req.Params.Arguments)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: " + err.Error()}
		}
		p := c.faults.take(t.name)
		if p.delay > 0 {
			select {
			case <-time.After(p.delay):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		switch p.fail {
		case modeBusiness:
			return result(envelope{Code: codeInjected, Msg: "injected failure"}), nil
		case modeIsError:
			return toolError("injected tool error"), nil
		case modeRPC:
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "injected internal error"}
		case modeInvalid:
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "injected invalid params"}
		case modeTimeout:
			<-ctx.Done()
			return nil, ctx.Err()
		case modeCrash:
			fmt.Fprintln(os.Stderr, "mcp-cms: crashing as asked")
			os.Exit(3)
		}
		data, err := t.run(c.store, a)
		var f *failure
		var res *sdk.CallToolResult
		switch {
		case errors.As(err, &f):
			res = result(envelope{Code: f.code, Msg: f.msg})
		case err != nil:
			res = toolError(err.Error())
		default:
			res = result(envelope{Code: codeOK, Msg: "ok", Data: data})
		}
		if p.commitTimeout {
			// The call took effect; the answer never comes.
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return res, nil
	}
}

var adminFaults = []field{
	{"delayMs", "integer", "delay every business call by this many milliseconds", false},
	{"failNext", "integer", "fail the next N business calls", false},
	{"failMode", "string", "business|iserror|rpc|invalid|timeout|crash", false},
	{"commitTimeoutNext", "integer", "apply the next N calls, then never answer", false},
	{"tool", "string", "limit the faults to this tool", false},
}

const faultsSchema = `{"type":"object","properties":{"delayMs":{"type":"integer"},"failNext":{"type":"integer"},"failMode":{"type":"string"},"commitTimeoutNext":{"type":"integer"},"tool":{"type":"string"},"calls":{"type":"object","additionalProperties":{"type":"integer"}}},"required":["delayMs","failNext","failMode","commitTimeoutNext","tool","calls"]}`

func (c *cms) status() envelope {
	fc, calls := c.faults.snapshot()
	return envelope{Code: codeOK, Msg: "ok", Data: map[string]any{
		"delayMs": fc.Delay.Milliseconds(), "failNext": fc.FailNext, "failMode": fc.FailMode,
		"commitTimeoutNext": fc.CommitTimeoutNext, "tool": fc.Tool, "calls": calls,
	}}
}

// addAdmin adds the tools a test or scenario uses to arm faults and read
// call counts. They are never subject to the faults themselves.
func (c *cms) addAdmin(srv *sdk.Server) {
	srv.AddTool(&sdk.Tool{
		Name: "admin_set_faults", Title: "Set faults",
		Description:  "Replace the armed faults (unset fields are zero) and return them with the call counts.",
		InputSchema:  inputSchema(adminFaults),
		OutputSchema: outputSchema(faultsSchema),
	}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		a, err := parseArgs(adminFaults, req.Params.Arguments)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: " + err.Error()}
		}
		fc := faultConfig{
			Delay: time.Duration(a.num("delayMs")) * time.Millisecond, FailNext: int(a.num("failNext")),
			FailMode: a.str("failMode"), CommitTimeoutNext: int(a.num("commitTimeoutNext")), Tool: a.str("tool"),
		}
		if err := fc.validate(); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: " + err.Error()}
		}
		c.faults.set(fc)
		return result(c.status()), nil
	})
	srv.AddTool(&sdk.Tool{
		Name: "admin_stats", Title: "Stats",
		Description:  "Return the armed faults and how many times each business tool was called.",
		InputSchema:  inputSchema(nil),
		OutputSchema: outputSchema(faultsSchema),
	}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return result(c.status()), nil
	})
	srv.AddTool(&sdk.Tool{
		Name: "admin_reset", Title: "Reset",
		Description:  "Put back the seed data, disarm every fault and zero the call counts.",
		InputSchema:  inputSchema(nil),
		OutputSchema: outputSchema(faultsSchema),
	}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		c.store.reset()
		c.faults.reset()
		return result(c.status()), nil
	})
}
