package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// ServiceName is the service.name of Warden's trace resource.
const ServiceName = "warden"

// SetupTracing installs the global OpenTelemetry tracer provider the host's
// and the loop's spans go to, as spec says:
//
//   - "none": nothing is installed; spans stay no-ops, which cost next to
//     nothing.
//   - "stdout:FILE": spans are batched and appended to FILE as JSON, one
//     span per line, with the resource service.name=warden and attrs
//     (service.version, for one).
//
// Call it once, at start, and call shutdown before exiting: it flushes the
// spans not yet written and closes FILE. Spans started after shutdown are
// dropped.
func SetupTracing(spec string, attrs ...attribute.KeyValue) (shutdown func(context.Context) error, err error) {
	none := func(context.Context) error { return nil }
	file, ok := strings.CutPrefix(spec, "stdout:")
	switch {
	case spec == "none":
		return none, nil
	case !ok || file == "":
		return nil, fmt.Errorf("telemetry: trace exporter %q (want none or stdout:FILE): %w", spec, ErrTraceSpec)
	}
	f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("telemetry: trace file: %w", err)
	}
	exp, err := stdouttrace.New(stdouttrace.WithWriter(f))
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("telemetry: trace exporter: %w", err)
	}
	res := resource.NewSchemaless(append([]attribute.KeyValue{attribute.String("service.name", ServiceName)}, attrs...)...)
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	return func(ctx context.Context) error {
		err := tp.Shutdown(ctx)
		if cerr := f.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		if err != nil {
			return fmt.Errorf("telemetry: trace shutdown: %w", err)
		}
		return nil
	}, nil
}
