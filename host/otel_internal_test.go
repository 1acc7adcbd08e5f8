package host

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/tracing"
)

// BenchmarkPluginSpanOff measures what a plugin call's span costs while no
// tracer provider is installed: the price every untraced call pays.
func BenchmarkPluginSpanOff(b *testing.B) {
	if !tracing.Off(otel.GetTracerProvider()) {
		b.Skip("a tracer provider is installed")
	}
	p := &Plugin{ref: "good@1.0.0"}
	req := &abi.Request{Tool: "create_site", Phase: abi.PhaseBefore}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, span := p.startCall(ctx, abi.RoleGuard, "tenant-a", req)
		endCall(span, abi.Verdict{Pass: true}, nil)
	}
}
