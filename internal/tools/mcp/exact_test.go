package mcp_test

import (
	"encoding/json"
	"testing"

	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/internal/tools/mcp"
)

// order is mcporders' get_order body, as the server writes it in its
// structured content (its SDK escapes <, > and &), and orderText as it is
// in its text content (a JSON string, whose value has them as they are).
const (
	order     = `{"code":200,"msg":"ok","data":{"orderId":1234567890123456789,"next":9007199254740993,"total":123456789012345678901234567890,"one":1.0,"zero":-0,"huge":1e400,"z":"last key first","a":"first key last","note":"\u003cb\u003eA \u0026 B\u003c/b\u003e"}}`
	orderText = `{"code":200,"msg":"ok","data":{"orderId":1234567890123456789,"next":9007199254740993,"total":123456789012345678901234567890,"one":1.0,"zero":-0,"huge":1e400,"z":"last key first","a":"first key last","note":"<b>A & B</b>"}}`
)

// ordersTransports dial mcporders over stdio and streamable HTTP.
var ordersTransports = []struct {
	name string
	cfg  func(t *testing.T) mcp.Config
}{
	{"stdio", func(*testing.T) mcp.Config { return mcp.Config{Name: "orders", Command: []string{ordersBin}} }},
	{"http", func(t *testing.T) mcp.Config {
		return mcp.Config{Name: "orders", URL: testdata.OrdersHTTP(t, ordersBin)}
	}},
}

func dialOrders(t *testing.T, cfg mcp.Config) *mcp.Client {
	t.Helper()
	c, err := mcp.Dial(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestExactNumbers: a result's numbers and key order reach Content as the
// server wrote them, and a call's arguments reach the server as Warden got
// them, over stdio and HTTP.
func TestExactNumbers(t *testing.T) {
	t.Parallel()
	args := `{"orderId":1234567890123456789,"total":123456789012345678901234567890,"one":1.0,"zero":-0,"huge":1e400,"b":1,"a":2}`
	for _, tr := range ordersTransports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			c := dialOrders(t, tr.cfg(t))
			got := call(t, c, "get_order", `{}`)
			if string(got.Content) != order {
				t.Fatalf("get_order content\n got %s\nwant %s", got.Content, order)
			}
			if got.Text != orderText {
				t.Fatalf("get_order text\n got %s\nwant %s", got.Text, orderText)
			}
			got = call(t, c, "cancel_order", args)
			want := `{"code":200,"msg":"ok","data":{"received":` + args + `}}`
			if string(got.Content) != want {
				t.Fatalf("cancel_order content\n got %s\nwant %s", got.Content, want)
			}
			// Whitespace in the arguments is the JSON's, not the values'.
			got = call(t, c, "cancel_order", "{ \"orderId\" : 9007199254740993 }")
			if want := `{"code":200,"msg":"ok","data":{"received":{"orderId":9007199254740993}}}`; string(got.Content) != want {
				t.Fatalf("cancel_order content\n got %s\nwant %s", got.Content, want)
			}
		})
	}
}

// TestExactRichResult: the parts of a result with a resource link are kept
// as sent.
func TestExactRichResult(t *testing.T) {
	t.Parallel()
	for _, tr := range ordersTransports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			c := dialOrders(t, tr.cfg(t))
			got := call(t, c, "get_receipt", `{}`)
			want := `{"content":[{"type":"text","text":"the receipt of order 1234567890123456789"},{"type":"resource_link","mimeType":"text/plain","uri":"orders://1234567890123456789/receipt","name":"receipt"}],"text":"the receipt of order 1234567890123456789"}`
			if string(got.Content) != want {
				t.Fatalf("content\n got %s\nwant %s", got.Content, want)
			}
			if !json.Valid(got.Content) {
				t.Fatal("content is not JSON")
			}
		})
	}
}
