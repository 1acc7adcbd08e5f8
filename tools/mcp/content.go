package mcp

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/loop/chain"
)

// response maps a tools/call result to a chain.Response.
//
// A result of text and structuredContent only keeps the rule skill
// contracts rely on: Content is structuredContent, else the text when it
// parses as JSON, else the text as a JSON string. A result with any other
// part (image, audio, resource, resource_link) has Content
//
//	{"content": [every part, in order, in MCP's JSON shape],
//	 "text": "the text parts joined by newlines",   // when there are any
//	 "structuredContent": {…}}                       // when there is one
//
// so that nothing the tool returned is lost on the way to the observation
// and the evidence.
func response(res *sdk.CallToolResult) (chain.Response, error) {
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
	var err error
	switch {
	case rich:
		env := struct {
			Content           []sdk.Content `json:"content"`
			Text              *string       `json:"text,omitempty"`
			StructuredContent any           `json:"structuredContent,omitempty"`
		}{Content: res.Content, StructuredContent: res.StructuredContent}
		if len(texts) > 0 {
			env.Text = &out.Text
		}
		if out.Content, err = json.Marshal(env); err != nil {
			return chain.Response{}, fmt.Errorf("tools/mcp: content: %w: %w", chain.ErrRPC, err)
		}
	case res.StructuredContent != nil:
		if out.Content, err = json.Marshal(res.StructuredContent); err != nil {
			return chain.Response{}, fmt.Errorf("tools/mcp: structured content: %w: %w", chain.ErrRPC, err)
		}
	case res.IsError:
	case len(texts) > 0:
		if json.Valid([]byte(out.Text)) {
			out.Content = json.RawMessage(out.Text)
		} else {
			out.Content, _ = json.Marshal(out.Text)
		}
	}
	return out, nil
}
