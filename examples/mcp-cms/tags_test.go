package main

import (
	"encoding/json"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestListTags calls list_tags over an in-memory MCP session: every tag, in
// id order, as structured content and as text; an argument is refused as
// invalid params; a reset leaves the tags as they are.
func TestListTags(t *testing.T) {
	c := &cms{store: newStore(), faults: newFaults(faultConfig{})}
	st, ct := sdk.NewInMemoryTransports()
	ss, err := c.server(0).Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "0"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	const all = `{"code":200,"msg":"ok","data":{"items":[{"tagId":"tag-1","name":"news"},{"tagId":"tag-2","name":"product"},{"tagId":"tag-3","name":"engineering"}],"total":3}}`
	tests := []struct {
		name, tool, args string
		want, wantErr    string
	}{
		{name: "all tags", tool: "list_tags", args: `{}`, want: all},
		{name: "no arguments at all", tool: "list_tags", args: `null`, want: all},
		{name: "an argument", tool: "list_tags", args: `{"prefix":"n"}`, wantErr: "calling \"tools/call\": invalid params: unknown argument prefix"},
		{name: "after a reset", tool: "admin_reset", args: `{}`},
		{name: "all tags after the reset", tool: "list_tags", args: `{}`, want: all},
	}
	for _, tt := range tests {
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: tt.tool, Arguments: json.RawMessage(tt.args)})
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("%s: error %v, want %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if tt.want == "" {
			continue
		}
		// Structured content arrives decoded: compare it as a value.
		var want any
		_ = json.Unmarshal([]byte(tt.want), &want)
		got, _ := json.Marshal(res.StructuredContent)
		canon, _ := json.Marshal(want)
		if string(got) != string(canon) || res.IsError || len(res.Content) != 1 || res.Content[0].(*sdk.TextContent).Text != tt.want {
			t.Fatalf("%s:\n got %s (error %t, content %v)\nwant %s", tt.name, got, res.IsError, res.Content, tt.want)
		}
	}

	// list_tags is listed as a read with its schemas.
	var listed *sdk.Tool
	for tl, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tl.Name == "list_tags" {
			listed = tl
		}
	}
	if listed == nil || listed.Annotations == nil || !listed.Annotations.ReadOnlyHint || listed.OutputSchema == nil {
		t.Fatalf("list_tags listed as %+v", listed)
	}
	in, _ := json.Marshal(listed.InputSchema)
	if string(in) != `{"additionalProperties":false,"properties":{},"required":[],"type":"object"}` {
		t.Fatalf("list_tags input schema %s", in)
	}
}
