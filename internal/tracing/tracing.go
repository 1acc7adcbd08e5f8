// Package tracing starts OpenTelemetry spans on the global tracer provider
// so that, while no SDK is installed, a span costs nothing: no tracer
// lookup, no allocation, no span started at all.
package tracing

import (
	"context"
	"reflect"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Tracer starts the spans of one instrumentation scope.
type Tracer struct {
	scope  string
	cached atomic.Pointer[tracerFor]
}

// tracerFor caches the tracer of the global provider it came from, so a span
// costs an atomic load and a comparison to find its tracer, and a provider
// set later (otel.SetTracerProvider, again in tests) is still followed. off
// marks a provider whose spans are all no-ops: the global default before
// any SDK is installed, or the noop package's.
type tracerFor struct {
	tp  trace.TracerProvider
	t   trace.Tracer
	off bool
}

// New returns the tracer of an instrumentation scope (a package path).
func New(scope string) *Tracer { return &Tracer{scope: scope} }

// noSpan is the span of a context without one: it records nothing.
var noSpan = trace.SpanFromContext(context.Background())

// Start starts a span on the global provider, or returns ctx and a span
// that records nothing when that provider is off. The span carries the
// attributes of the task ctx names (WithTask).
func (t *Tracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	tp := otel.GetTracerProvider()
	c := t.cached.Load()
	if c == nil || c.tp != tp {
		c = &tracerFor{tp: tp, t: tp.Tracer(t.scope), off: Off(tp)}
		// Only a comparable provider can be cached: comparing two values
		// of the same uncomparable type would panic.
		if reflect.TypeOf(tp).Comparable() {
			t.cached.Store(c)
		}
	}
	if c.off {
		return ctx, noSpan
	}
	if task, ok := TaskFrom(ctx); ok {
		opts = append(opts, trace.WithAttributes(task.Attributes()...))
	}
	return c.t.Start(ctx, name, opts...)
}

// Off reports whether every span of tp is a no-op.
func Off(tp trace.TracerProvider) bool {
	if _, ok := tp.(noop.TracerProvider); ok {
		return true
	}
	t := reflect.TypeOf(tp)
	return t.Kind() == reflect.Pointer && t.Elem().PkgPath() == "go.opentelemetry.io/otel/internal/global" && t.Elem().Name() == "tracerProvider"
}
