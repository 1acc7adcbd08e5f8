package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/tools"
)

// ReadResourceTool is the tool a Client lists for a server that offers
// resources: it reads one by its URI (MCP resources/read), so that a
// resource link a tool returned can be followed. It is a read, and like
// any business tool it is offered to a node only when the skill's
// toolNames name it; its answer goes through the chain and becomes
// evidence. A server's own tool of this name wins over it.
const ReadResourceTool = "resources_read"

var readResourceSchema = json.RawMessage(`{"type":"object","properties":{"uri":{"type":"string","minLength":1,"description":"the resource's URI: the uri of a resource_link a tool returned, or one the server lists"}},"required":["uri"],"additionalProperties":false}`)

// readTool is ReadResourceTool as the Client lists it.
func (c *Client) readTool() tools.Tool {
	yes := true
	return tools.Tool{Name: ReadResourceTool, Title: "Read a resource",
		Description: "Read a resource of the " + c.name + " server by its URI (MCP resources/read), e.g. the uri of a resource_link a tool returned. The answer is {\"contents\":[{\"uri\",\"mimeType\",\"text\" or \"blob\"}]}.",
		InputSchema: readResourceSchema, Annotations: &tools.Annotations{ReadOnlyHint: &yes}}
}

// offersResources reports whether the session's server said it has
// resources.
func offersResources(s *session) bool {
	r := s.cs.InitializeResult()
	return r != nil && r.Capabilities != nil && r.Capabilities.Resources != nil
}

// readsResources reports whether a call of name is a resources/read: the
// server offers resources and has no tool of that name.
func (c *Client) readsResources(name string) bool {
	if name != ReadResourceTool {
		return false
	}
	c.toolsMu.Lock()
	defer c.toolsMu.Unlock()
	return c.synthRead
}

// readResource answers a call of ReadResourceTool: Content is the result
// as the server sent it ({"contents":[…]}), Text the text contents joined.
func (c *Client) readResource(ctx context.Context, args json.RawMessage) (chain.Response, error) {
	var in struct {
		URI string `json:"uri"`
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || in.URI == "" {
		return chain.Response{}, fmt.Errorf("tools/mcp: %s on %s: arguments must be {\"uri\": \"…\"}: %w", ReadResourceTool, c.name, chain.ErrInvalidParams)
	}
	for retried := false; ; retried = true {
		s, err := c.live(ctx)
		if err != nil {
			return chain.Response{}, err
		}
		params := &sdk.ReadResourceParams{URI: in.URI}
		token := fmt.Sprintf("warden-%d", c.nextID.Add(1))
		params.SetProgressToken(token)
		c.exact.expect(token)
		res, err := s.cs.ReadResource(ctx, params)
		raw, captured := c.exact.take(token)
		if err != nil {
			if errors.Is(err, sdk.ErrSessionMissing) && !retried {
				c.forget(s)
				continue
			}
			return chain.Response{}, c.fail(ctx, "read resource "+in.URI, err)
		}
		var texts []string
		for _, rc := range res.Contents {
			if rc != nil && rc.Text != "" {
				texts = append(texts, rc.Text)
			}
		}
		out := chain.Response{Text: strings.Join(texts, "\n")}
		var wire struct {
			Contents json.RawMessage `json:"contents"`
		}
		if captured && json.Unmarshal(raw, &wire) == nil && len(wire.Contents) > 0 {
			out.Content = append(append([]byte(`{"contents":`), bytes.TrimSpace(wire.Contents)...), '}')
		} else {
			// Answered from the SDK's cache: its contents are strings
			// and bytes, which it keeps exactly.
			if out.Content, err = json.Marshal(struct {
				Contents []*sdk.ResourceContents `json:"contents"`
			}{res.Contents}); err != nil {
				return chain.Response{}, fmt.Errorf("tools/mcp: read resource on %s: %w: %w", c.name, chain.ErrRPC, err)
			}
		}
		return out, nil
	}
}

// linkedURIs returns the uri of every resource_link part of a rich
// result's Content.
func linkedURIs(content json.RawMessage) []string {
	if !bytes.Contains(content, []byte(`"resource_link"`)) {
		return nil
	}
	var rich struct {
		Content []struct {
			Type string `json:"type"`
			URI  string `json:"uri"`
		} `json:"content"`
	}
	if json.Unmarshal(content, &rich) != nil {
		return nil
	}
	var out []string
	for _, p := range rich.Content {
		if p.Type == "resource_link" && p.URI != "" {
			out = append(out, p.URI)
		}
	}
	return out
}
