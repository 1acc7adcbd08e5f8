package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentwarden/warden/internal/tools/mcp"
	"github.com/agentwarden/warden/internal/tracing"
)

// TestCallToolSpan checks the span of a tools/call that answered, of one
// whose tool reported a failure and of one the server refused: name, kind,
// attributes (the task the context named among them) and status. It is the
// only test here that installs a global tracer provider, so it does not
// run in parallel.
func TestCallToolSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	c, err := mcp.Dial(t.Context(), mcp.Config{Name: "cms", Command: []string{cmsBin}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	var created struct {
		Data struct{ ArticleID string } `json:"data"`
	}
	if err := json.Unmarshal(call(t, c, "create_article", `{"websiteId":"ws-1","title":"Blank"}`).Content, &created); err != nil || created.Data.ArticleID == "" {
		t.Fatalf("create_article: %v %+v", err, created)
	}
	tests := []struct {
		tool, args string
		want       string
	}{
		{"query_space", `{"spaceId":"sp-1"}`,
			"tools/call query_space client gen_ai.tool.name=query_space mcp.method.name=tools/call mcp.server=cms warden.mcp.outcome=ok warden.session=s-1 warden.task.key=s-1/t1 warden.task=t1 warden.tenant=acme Unset"},
		{"publish_article", `{"articleId":"` + created.Data.ArticleID + `"}`,
			"tools/call publish_article client gen_ai.tool.name=publish_article mcp.method.name=tools/call mcp.server=cms warden.mcp.outcome=tool_error warden.session=s-1 warden.task.key=s-1/t1 warden.task=t1 warden.tenant=acme Unset"},
		{"no_such_tool", `{}`,
			"tools/call no_such_tool client gen_ai.tool.name=no_such_tool mcp.method.name=tools/call mcp.server=cms warden.mcp.outcome=invalid_params warden.session=s-1 warden.task.key=s-1/t1 warden.task=t1 warden.tenant=acme Error"},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			ctx := tracing.WithTask(context.Background(), tracing.Task{Tenant: "acme", Session: "s-1", ID: "t1"})
			ctx, parent := otel.Tracer("test").Start(ctx, "warden.tool_call")
			_, _ = c.CallTool(ctx, tt.tool, json.RawMessage(tt.args))
			parent.End()
			var got []string
			for _, s := range rec.Ended() {
				if s.Parent().SpanID() != parent.SpanContext().SpanID() {
					continue
				}
				var kv []string
				for _, a := range s.Attributes() {
					kv = append(kv, fmt.Sprintf("%s=%s", a.Key, a.Value.Emit()))
				}
				sort.Strings(kv)
				got = append(got, fmt.Sprintf("%s %s %s %v", s.Name(), s.SpanKind(), strings.Join(kv, " "), s.Status().Code))
			}
			if len(got) != 1 || got[0] != tt.want {
				t.Fatalf("spans %q, want %q", got, tt.want)
			}
		})
	}
}
