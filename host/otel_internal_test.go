package host

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/agentwarden/warden/abi"
)

// defaultProvider is the global provider before any test installs one.
var defaultProvider = otel.GetTracerProvider()

// TestTracingOff checks which providers make spans free: the global default
// and the noop package's, never an SDK.
func TestTracingOff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		tp   trace.TracerProvider
		want bool
	}{
		{"global default", defaultProvider, true},
		{"noop", noop.NewTracerProvider(), true},
		{"sdk", sdktrace.NewTracerProvider(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tracingOff(tt.tp); got != tt.want {
				t.Fatalf("tracingOff(%T) = %v, want %v", tt.tp, got, tt.want)
			}
		})
	}
}

// BenchmarkPluginSpanOff measures what a plugin call's span costs while no
// tracer provider is installed: the price every untraced call pays.
func BenchmarkPluginSpanOff(b *testing.B) {
	if !tracingOff(otel.GetTracerProvider()) {
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
