package main

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentwarden/warden/internal/tracing"
)

// traceHTTP wraps the API's handler with request tracing: each request is a
// server span named by its route pattern ("POST
// /v1/sessions/{session}/messages"), the child of the trace an incoming
// traceparent names, and the parent of the task it runs (the run's
// context is detached from the request's cancellation, not from its
// span). A span for a session or task route carries the session, task and
// task key too; a new task's id is read from the answer's Location. With
// tracing off the handler is h itself.
func traceHTTP(h http.Handler) http.Handler {
	tp := otel.GetTracerProvider()
	if tracing.Off(tp) {
		return h
	}
	return traceHTTPTo(tp, h)
}

// traceHTTPTo is traceHTTP with the spans going to tp, the propagator the
// global one.
func traceHTTPTo(tp trace.TracerProvider, h http.Handler) http.Handler {
	return otelhttp.NewHandler(labelRequest(h), "warden", otelhttp.WithTracerProvider(tp),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			switch {
			case r.Pattern == "":
				return r.Method
			case strings.Contains(r.Pattern, " "):
				return r.Pattern
			}
			return r.Method + " " + r.Pattern
		}))
}

// labelRequest names the request's span after the mux has matched the
// request (the mux sets its pattern and path values on r itself).
func labelRequest(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		labelSpan(r.Context(), r.PathValue("session"), r.PathValue("task"), w.Header().Get("Location"))
	})
}

// labelSpan sets the session and task a request named, or the task its
// answer's Location names (…/sessions/{session}/tasks/{task}), on the
// request's span.
func labelSpan(ctx context.Context, session, task, location string) {
	if session == "" || !trace.SpanFromContext(ctx).IsRecording() {
		return
	}
	if u, err := url.Parse(location); err == nil && task == "" {
		if rest, ok := strings.CutPrefix(u.Path, "/v1/sessions/"+session+"/tasks/"); ok && rest != "" && !strings.Contains(rest, "/") {
			task = rest
		}
	}
	tracing.Label(ctx, tracing.Task{Session: session, ID: task})
}

// spanSelfTest is the span the start's plugin loading runs under.
const spanSelfTest = "warden.selftest"

// selfTested runs load (the start's plugin loading: each slot's load
// check and self-test call its plugin) under one span of its own, so that
// those plugin calls make one trace rather than a root trace each.
func selfTested(ctx context.Context, load func(context.Context) error) error {
	return selfTestedTo(ctx, otel.GetTracerProvider(), load)
}

func selfTestedTo(ctx context.Context, tp trace.TracerProvider, load func(context.Context) error) error {
	if tracing.Off(tp) {
		return load(ctx)
	}
	ctx, span := tp.Tracer("github.com/agentwarden/warden/cmd/warden").Start(ctx, spanSelfTest)
	defer span.End()
	err := load(ctx)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	return err
}
