package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/chain"
)

// response maps a tools/call result to a chain.Response. res is the SDK's
// decoding of raw, the result as the server sent it; every JSON value in
// Content is taken from raw, byte for byte, so numbers keep every digit
// and objects their key order (the SDK's values hold float64 and maps).
//
// A result of text and structuredContent only keeps the rule skill
// contracts rely on: Content is structuredContent, else the text when it
// parses as JSON, else the text as a JSON string. A result with any other
// part (image, audio, resource, resource_link) has Content
//
//	{"content": [every part, in order, as the server sent it],
//	 "text": "the text parts joined by newlines",   // when there are any
//	 "structuredContent": {…}}                       // when there is one
//
// so that nothing the tool returned is lost on the way to the observation
// and the evidence.
func response(res *sdk.CallToolResult, raw json.RawMessage) (chain.Response, error) {
	var wire struct {
		Content           []json.RawMessage `json:"content"`
		StructuredContent json.RawMessage   `json:"structuredContent"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil {
		return chain.Response{}, fmt.Errorf("tools/mcp: result: %w: %w", chain.ErrRPC, err)
	}
	if len(wire.Content) != len(res.Content) {
		return chain.Response{}, fmt.Errorf("tools/mcp: result: %w: %d content parts sent, %d decoded", chain.ErrRPC, len(wire.Content), len(res.Content))
	}
	structured := bytes.TrimSpace(wire.StructuredContent)
	if string(structured) == "null" {
		structured = nil
	}
	var texts []string
	rich := false
	for _, ct := range res.Content {
		if tc, ok := ct.(*sdk.TextContent); ok {
			texts = append(texts, tc.Text)
		} else {
			rich = true
		}
	}
	out := chain.Response{IsError: res.IsError, Text: strings.Join(texts, "\n")}
	switch {
	case rich:
		var b bytes.Buffer
		b.WriteString(`{"content":[`)
		for i, p := range wire.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(bytes.TrimSpace(p))
		}
		b.WriteByte(']')
		if len(texts) > 0 {
			b.WriteString(`,"text":`)
			b.Write(jsonString(out.Text))
		}
		if structured != nil {
			b.WriteString(`,"structuredContent":`)
			b.Write(structured)
		}
		b.WriteByte('}')
		out.Content = b.Bytes()
	case structured != nil:
		out.Content = json.RawMessage(structured)
	case res.IsError:
	case len(texts) > 0:
		if json.Valid([]byte(out.Text)) {
			out.Content = json.RawMessage(out.Text)
		} else {
			out.Content = jsonString(out.Text)
		}
	}
	return out, nil
}

// jsonString is s as a JSON string, its characters as they are (no HTML
// escaping).
func jsonString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// decodeResult decodes a tools/call result as the SDK does, except that
// structuredContent is left out: Go's float64 cannot hold every JSON number,
// and response takes structuredContent from the raw result anyway.
func decodeResult(raw json.RawMessage) (*sdk.CallToolResult, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	delete(fields, "structuredContent")
	b, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	var res sdk.CallToolResult
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, err
	}
	return &res, nil
}
