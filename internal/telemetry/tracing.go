package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/go-logr/logr"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
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
// Whatever the spec, the W3C TraceContext and Baggage propagators are
// installed globally, so that an incoming traceparent is read (and an
// outgoing one written) by the HTTP instrumentation, and OpenTelemetry's
// own errors and logs go through slog as JSON (LogOTel says to which
// logger; until it is called, a JSON logger on standard error) instead of
// plain text on standard error.
//
// Call it once, at start, and call shutdown before exiting: it flushes the
// spans not yet written and closes FILE. Spans started after shutdown are
// dropped.
func SetupTracing(spec string, attrs ...attribute.KeyValue) (shutdown func(context.Context) error, err error) {
	none := func(context.Context) error { return nil }
	installGlobals()
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
func setupOTLP(endpoint string, attrs []attribute.KeyValue, opts ...otlptracehttp.Option) (func(context.Context) error, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("telemetry: trace exporter otlp:%s: want an http(s) URL: %w", endpoint, ErrTraceSpec)
	}
	exp, err := otlptracehttp.New(context.Background(), append([]otlptracehttp.Option{otlptracehttp.WithEndpointURL(endpoint)}, opts...)...)
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

// OTelErrorMessage is the message of the record each of OpenTelemetry's own
// errors (an export that failed, a span dropped) is logged as.
const OTelErrorMessage = "opentelemetry error"

// otelLog is the logger OpenTelemetry's errors and logs go to.
var otelLog atomic.Pointer[slog.Logger]

// LogOTel sends OpenTelemetry's own errors (at ERROR, as OTelErrorMessage
// with the error as err) and its internal logs (at DEBUG and below) to log
// from now on.
func LogOTel(log *slog.Logger) { otelLog.Store(log) }

// installGlobals installs the propagators, and OpenTelemetry's error
// handler and logger, which write through otelLog.
func installGlobals() {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	otelLog.CompareAndSwap(nil, slog.New(NewTraceHandler(slog.NewJSONHandler(os.Stderr, nil))))
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		otelLog.Load().Error(OTelErrorMessage, "err", err)
	}))
	otel.SetLogger(logr.FromSlogHandler(otelHandler{}))
}

// otelHandler is a slog.Handler writing through the logger otelLog holds
// when each record is written, so that LogOTel applies to the logr logger
// OpenTelemetry was given before. ops are its WithAttrs and WithGroup
// calls, replayed in order.
type otelHandler struct {
	ops []func(slog.Handler) slog.Handler
}

func (h otelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return otelLog.Load().Handler().Enabled(ctx, l)
}

func (h otelHandler) Handle(ctx context.Context, r slog.Record) error {
	out := otelLog.Load().Handler()
	for _, op := range h.ops {
		out = op(out)
	}
	return out.Handle(ctx, r)
}

func (h otelHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return otelHandler{ops: append(slices.Clip(h.ops), func(o slog.Handler) slog.Handler { return o.WithAttrs(as) })}
}

func (h otelHandler) WithGroup(name string) slog.Handler {
	return otelHandler{ops: append(slices.Clip(h.ops), func(o slog.Handler) slog.Handler { return o.WithGroup(name) })}
}
