package tracing

import (
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
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
			if got := Off(tt.tp); got != tt.want {
				t.Fatalf("Off(%T) = %v, want %v", tt.tp, got, tt.want)
			}
		})
	}
}
