package openai

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentwarden/warden/internal/tracing"
)

// TestCompleteSpan checks the span of a call that answered and of one that
// failed: its name, kind, gen_ai attributes, the task the context named,
// and its status. It is the only test here that installs a global tracer
// provider, so it does not run in parallel.
func TestCompleteSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	tests := []struct {
		name  string
		reply reply
		attrs string
		code  codes.Code
	}{
		{"answered", reply{status: http.StatusOK, body: `{"choices":[{"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`},
			`gen_ai.operation.name=chat gen_ai.request.model=gpt-test gen_ai.response.finish_reasons=["stop"] gen_ai.system=openai gen_ai.usage.input_tokens=12 gen_ai.usage.output_tokens=3 warden.session=s-1 warden.task.key=s-1/t1 warden.task=t1 warden.tenant=acme`,
			codes.Unset},
		{"refused key", reply{status: http.StatusUnauthorized, body: `{"error":{"message":"bad key","type":"invalid_request_error"}}`},
			`error.type=provider authentication failed gen_ai.operation.name=chat gen_ai.request.model=gpt-test gen_ai.system=openai warden.session=s-1 warden.task.key=s-1/t1 warden.task=t1 warden.tenant=acme`,
			codes.Error},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, tt.reply)
			ctx := tracing.WithTask(context.Background(), tracing.Task{Tenant: "acme", Session: "s-1", ID: "t1"})
			ctx, parent := otel.Tracer("test").Start(ctx, "warden.node")
			_, _ = newTestClient(t, testConfig(srv.URL)).Complete(ctx, userOnly)
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
			want := fmt.Sprintf("chat gpt-test client %s %v", tt.attrs, tt.code)
			if len(got) != 1 || got[0] != want {
				t.Fatalf("spans %q, want %q", got, want)
			}
		})
	}
}
