// Command mcporders is an MCP server (the go-sdk's server side) that tests
// use to check that JSON passes through Warden exactly: its order ids are
// integers no float64 holds, its results keep an unusual key order, and its
// write echoes the arguments it received, byte for byte.
//
//	mcporders                 serve over stdio
//	mcporders -http ADDR      serve streamable HTTP at ADDR/mcp
//
// Tools:
//
//	get_order     the order as structuredContent (and the same JSON as
//	              text); the first call adds track_order and answers once
//	              notifications/tools/list_changed is out
//	get_receipt   a text and a resource link to the order's receipt
//	cancel_order  a write: {"code":200,…,"data":{"received":<arguments>}}
//	track_order   a read added late: {"code":200,…,"data":{"received":<arguments>}}
//
// Resource: orders://1234567890123456789/receipt, a text receipt.
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
	"sync"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Order is get_order's data: integers past 2^53, a 30-digit integer, 1.0,
// -0, 1e400, and keys out of alphabetical order.
const Order = `{"orderId":1234567890123456789,"next":9007199254740993,"total":123456789012345678901234567890,"one":1.0,"zero":-0,"huge":1e400,"z":"last key first","a":"first key last"}`

// Receipt is the receipt resource's URI.
const Receipt = "orders://1234567890123456789/receipt"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mcporders:", err)
		os.Exit(1)
	}
}

func run(argv []string) error {
	fs := flag.NewFlagSet("mcporders", flag.ContinueOnError)
	addr := fs.String("http", "", "serve streamable HTTP at this address instead of stdio")
	if err := fs.Parse(argv); err != nil {
		return err
	}
	srv := server()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *addr == "" {
		return srv.Run(ctx, &sdk.StdioTransport{})
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(os.Stderr, "mcporders: listening on http://%s/mcp\n", ln.Addr())
	go func() {
		<-ctx.Done()
		_ = hs.Close()
	}()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

var (
	empty   = json.RawMessage(`{"type":"object"}`)
	orderID = json.RawMessage(`{"type":"object","properties":{"orderId":{"type":"integer","description":"the order's id"}},"required":["orderId"]}`)
)

func server() *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "mcporders", Version: "1"}, nil)
	var late sync.Once
	srv.AddTool(&sdk.Tool{Name: "get_order", Description: "Look up the order.", InputSchema: empty,
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			late.Do(func() {
				srv.AddTool(&sdk.Tool{Name: "track_order", Description: "Track the order.", InputSchema: orderID,
					Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, echo)
				// The SDK sends list_changed 10 ms after a change: wait
				// for it to be out, so that it comes before the result.
				time.Sleep(100 * time.Millisecond)
			})
			body := `{"code":200,"msg":"ok","data":` + Order + `}`
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: body}}, StructuredContent: json.RawMessage(body)}, nil
		})
	srv.AddTool(&sdk.Tool{Name: "get_receipt", Description: "Link to the order's receipt.", InputSchema: empty,
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "the receipt of order 1234567890123456789"},
				&sdk.ResourceLink{URI: Receipt, Name: "receipt", MIMEType: "text/plain"},
			}}, nil
		})
	srv.AddTool(&sdk.Tool{Name: "cancel_order", Description: "Cancel the order.", InputSchema: orderID}, echo)
	srv.AddResource(&sdk.Resource{URI: Receipt, Name: "receipt", MIMEType: "text/plain"},
		func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain",
				Text: "receipt of order 1234567890123456789: paid 123456789012345678901234567890"}}}, nil
		})
	return srv
}

// echo answers a write with the arguments it received, as they came.
func echo(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	args := req.Params.Arguments
	if len(args) == 0 {
		args = json.RawMessage("null")
	}
	body := `{"code":200,"msg":"ok","data":{"received":` + string(args) + `}}`
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: body}}, StructuredContent: json.RawMessage(body)}, nil
}
