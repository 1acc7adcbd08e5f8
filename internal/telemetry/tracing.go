package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
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
//   - "otlp:URL": spans are batched and sent to an OpenTelemetry
//     collector over OTLP/HTTP (protobuf) at URL, its traces endpoint
//     (http://collector:4318/v1/traces), with the same resource.
//
// Call it once, at start, and call shutdown before exiting: it flushes the
// spans not yet written and closes FILE. Spans started after shutdown are
// dropped.
func SetupTracing(spec string, attrs ...attribute.KeyValue) (shutdown func(context.Context) error, err error) {
	none := func(context.Context) error { return nil }
	if spec == "none" {
		return none, nil
	}
	if endpoint, ok := strings.CutPrefix(spec, "otlp:"); ok {
		return setupOTLP(endpoint, attrs)
	}
	file, ok := strings.CutPrefix(spec, "stdout:")
	if !ok || file == "" {
		return nil, fmt.Errorf("telemetry: trace exporter %q (want none, stdout:FILE or otlp:URL): %w", spec, ErrTraceSpec)
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
	tp := install(exp, attrs)
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

// install makes a batching provider over exp the global one.
func install(exp sdktrace.SpanExporter, attrs []attribute.KeyValue) *sdktrace.TracerProvider {
	res := resource.NewSchemaless(append([]attribute.KeyValue{attribute.String("service.name", ServiceName)}, attrs...)...)
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	return tp
}

// setupOTLP exports to an OTLP/HTTP traces endpoint.
func setupOTLP(endpoint string, attrs []attribute.KeyValue) (func(context.Context) error, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("telemetry: trace exporter otlp:%s: want an http(s) URL: %w", endpoint, ErrTraceSpec)
	}
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, fmt.Errorf("telemetry: trace exporter: %w", err)
	}
	tp := install(exp, attrs)
	return func(ctx context.Context) error {
		if err := tp.Shutdown(ctx); err != nil {
			return fmt.Errorf("telemetry: trace shutdown: %w", err)
		}
		return nil
	}, nil
}
