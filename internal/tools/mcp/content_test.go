package mcp

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/chain"
)

func TestResponse(t *testing.T) {
	t.Parallel()
	img := &sdk.ImageContent{Data: []byte("\x89PNG"), MIMEType: "image/png"}
	cases := []struct {
		name    string
		res     *sdk.CallToolResult
		raw     string // the result as sent; "" = res marshalled
		content string // "" = nil
		text    string
		isError bool
	}{
		{name: "json text", res: &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: `{"code":200}`}}},
			content: `{"code":200}`, text: `{"code":200}`},
		{name: "plain text", res: &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a"}, &sdk.TextContent{Text: "b"}}},
			content: `"a\nb"`, text: "a\nb"},
		{name: "structured wins over text", res: &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "72°F"}}, StructuredContent: map[string]any{"t": 72}},
			content: `{"t":72}`, text: "72°F"},
		{name: "tool error text", res: &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "nope"}}},
			text: "nope", isError: true},
		{name: "nothing", res: &sdk.CallToolResult{}},
		{name: "image and text", res: &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "here"}, img}},
			content: `{"content":[{"type":"text","text":"here"},{"type":"image","mimeType":"image/png","data":"iVBORw=="}],"text":"here"}`, text: "here"},
		{name: "image only", res: &sdk.CallToolResult{Content: []sdk.Content{img}},
			content: `{"content":[{"type":"image","mimeType":"image/png","data":"iVBORw=="}]}`},
		{name: "audio", res: &sdk.CallToolResult{Content: []sdk.Content{&sdk.AudioContent{Data: []byte("RIFF"), MIMEType: "audio/wav"}}},
			content: `{"content":[{"type":"audio","mimeType":"audio/wav","data":"UklGRg=="}]}`},
		{name: "resource link", res: &sdk.CallToolResult{Content: []sdk.Content{&sdk.ResourceLink{URI: "file:///a.txt", Name: "a", MIMEType: "text/plain"}}},
			content: `{"content":[{"type":"resource_link","mimeType":"text/plain","uri":"file:///a.txt","name":"a"}]}`},
		{name: "embedded resource", res: &sdk.CallToolResult{Content: []sdk.Content{&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "demo://x", MIMEType: "application/gzip", Blob: []byte{1, 2}}}}},
			content: `{"content":[{"type":"resource","resource":{"uri":"demo://x","mimeType":"application/gzip","blob":"AQI="}}]}`},
		{name: "rich with structured", res: &sdk.CallToolResult{Content: []sdk.Content{img}, StructuredContent: map[string]any{"n": 1}},
			content: `{"content":[{"type":"image","mimeType":"image/png","data":"iVBORw=="}],"structuredContent":{"n":1}}`},
		{name: "rich tool error", res: &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "bad"}, img}},
			content: `{"content":[{"type":"text","text":"bad"},{"type":"image","mimeType":"image/png","data":"iVBORw=="}],"text":"bad"}`, text: "bad", isError: true},
		// The SDK's values hold float64: what reaches Content is the
		// result as sent.
		{name: "structured numbers exact",
			res:     &sdk.CallToolResult{Content: []sdk.Content{}, StructuredContent: map[string]any{"orderId": 1234567890123456789.0}},
			raw:     `{"content":[],"structuredContent":{"z":1,"orderId":1234567890123456789,"b":9007199254740993,"c":123456789012345678901234567890,"d":1.0,"e":-0,"f":1e400,"g":[1.50,2E3]}}`,
			content: `{"z":1,"orderId":1234567890123456789,"b":9007199254740993,"c":123456789012345678901234567890,"d":1.0,"e":-0,"f":1e400,"g":[1.50,2E3]}`},
		{name: "structured scalar", res: &sdk.CallToolResult{Content: []sdk.Content{}, StructuredContent: 1.2345678901234568e+29},
			raw: `{"content":[],"structuredContent": 123456789012345678901234567890 }`, content: `123456789012345678901234567890`},
		{name: "structured null is none", res: &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "x"}}},
			raw: `{"content":[{"type":"text","text":"x"}],"structuredContent":null}`, content: `"x"`, text: "x"},
		{name: "text numbers exact", res: &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: `{"id":9007199254740993}`}}},
			raw: `{"content":[{"type":"text","text":"{\"id\":9007199254740993}"}]}`, content: `{"id":9007199254740993}`, text: `{"id":9007199254740993}`},
		{name: "rich parts as sent", res: &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "<a>"}, &sdk.ResourceLink{URI: "orders://1", Name: "o"}}, StructuredContent: map[string]any{"n": 1.0}},
			raw:     `{"content":[{"type":"text","text":"<a>"},{"uri":"orders://1","type":"resource_link","name":"o","size":1234567890123456789}],"structuredContent":{"n":1.0}}`,
			content: `{"content":[{"type":"text","text":"<a>"},{"uri":"orders://1","type":"resource_link","name":"o","size":1234567890123456789}],"text":"<a>","structuredContent":{"n":1.0}}`, text: "<a>"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			raw := []byte(tc.raw)
			if tc.raw == "" {
				var err error
				if raw, err = json.Marshal(tc.res); err != nil {
					t.Fatal(err)
				}
			}
			got, err := response(tc.res, raw)
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Content) != tc.content || got.Text != tc.text || got.IsError != tc.isError {
				t.Fatalf("got content %s text %q isError %v\nwant content %s text %q isError %v", got.Content, got.Text, got.IsError, tc.content, tc.text, tc.isError)
			}
			if got.Content != nil && !json.Valid(got.Content) {
				t.Fatalf("content is not JSON: %s", got.Content)
			}
		})
	}
}

// TestResponseMismatch: a raw result that is not the decoded one is a
// protocol error, never a silent fall back on the SDK's values.
func TestResponseMismatch(t *testing.T) {
	t.Parallel()
	res := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a"}}}
	for _, raw := range []string{`{"content":[]}`, `[`, `"x"`} {
		if _, err := response(res, json.RawMessage(raw)); !errors.Is(err, chain.ErrRPC) {
			t.Errorf("raw %s: err %v, want chain.ErrRPC", raw, err)
		}
	}
}

func TestChildEnv(t *testing.T) {
	// Not parallel: it sets the process environment.
	t.Setenv("WARDEN_ENV_TEST_SECRET", "s")
	t.Setenv("WARDEN_ENV_TEST_ALLOWED", "a")
	t.Setenv("HOME", "/home/w")
	got := childEnv(Config{EnvAllow: []string{"WARDEN_ENV_TEST_ALLOWED", "WARDEN_ENV_TEST_UNSET"}, Env: []string{"HOME=/srv", "EXTRA=x=y"}})
	for _, want := range []string{"HOME=/srv", "WARDEN_ENV_TEST_ALLOWED=a", "EXTRA=x=y"} {
		if !slices.Contains(got, want) {
			t.Errorf("%q missing from %q", want, got)
		}
	}
	if p, ok := os.LookupEnv("PATH"); ok && !slices.Contains(got, "PATH="+p) {
		t.Errorf("PATH missing from %q", got)
	}
	for _, kv := range got {
		if kv == "WARDEN_ENV_TEST_SECRET=s" || kv == "HOME=/home/w" || kv == "WARDEN_ENV_TEST_UNSET=" {
			t.Errorf("%q in %q", kv, got)
		}
	}
}

func TestHintsPeek(t *testing.T) {
	t.Parallel()
	var h hints
	h.peek([]byte(`{"jsonrpc":"2.0","id":3,"result":{"tools":[` +
		`{"name":"a","annotations":{"readOnlyHint":false},"execution":{"taskSupport":"required"}},` +
		`{"name":"b","annotations":{"title":"B"}},` +
		`{"name":"c"}]}}`))
	h.peek([]byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"tools"}}`))
	// A call's result that happens to hold a tools list is not a listing.
	h.peek([]byte(`{"jsonrpc":"2.0","id":4,"result":{"content":[],"tools":[{"name":"c","annotations":{"readOnlyHint":false}}]}}`))
	a, b, c := h.get("a"), h.get("b"), h.get("c")
	if a.taskSupport != "required" || a.annotations == nil || a.annotations.ReadOnlyHint == nil || *a.annotations.ReadOnlyHint || a.annotations.DestructiveHint != nil {
		t.Fatalf("a: %+v %+v", a, a.annotations)
	}
	if b.annotations != nil || c.annotations != nil || b.taskSupport != "" {
		t.Fatalf("b %+v c %+v", b, c)
	}
}

func TestTapSSE(t *testing.T) {
	t.Parallel()
	var got []string
	tap := newTapSSE(nil, func(b []byte) { got = append(got, string(b)) })
	stream := "event: message\r\nid: 1\r\ndata: {\"a\":\n" + "data: 1}\n\n" + ": comment\n\ndata: {\"b\":2}\n\n"
	// Fed in pieces that split lines, as a network read does.
	for i := 0; i < len(stream); i += 5 {
		end := min(i+5, len(stream))
		tap.pending = append(tap.pending, stream[i:end]...)
		tap.split()
	}
	if !slices.Equal(got, []string{"{\"a\":\n1}", `{"b":2}`}) {
		t.Fatalf("events %q", got)
	}
}
