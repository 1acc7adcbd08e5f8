package mcp

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/tracing"
)

// Span attribute keys of an MCP call: the method and tool as
// OpenTelemetry's conventions for MCP name them, the server by its
// configured name, and how the call came out.
const (
	AttrMethod  = attribute.Key("mcp.method.name")
	AttrTool    = attribute.Key("gen_ai.tool.name")
	AttrServer  = attribute.Key("mcp.server")
	AttrOutcome = attribute.Key("warden.mcp.outcome") // ok, tool_error, auth, timeout, unreachable, io, invalid_params, rpc
)

// tracer starts the package's spans; nothing while tracing is off.
var tracer = tracing.New("github.com/agentwarden/warden/internal/tools/mcp")

// startCall starts the client span of one tools/call; its progress
// notifications become events on it.
func (c *Client) startCall(ctx context.Context, tool string) (context.Context, trace.Span) {
	ctx, span := tracer.Start(ctx, "tools/call "+tool, trace.WithSpanKind(trace.SpanKindClient))
	if span.IsRecording() {
		span.SetAttributes(AttrMethod.String("tools/call"), AttrTool.String(tool), AttrServer.String(c.name))
	}
	return ctx, span
}

// failures name the chain sentinels a failed call wraps, as its outcome.
var failures = []struct {
	err  error
	name string
}{
	{chain.ErrAuth, "auth"},
	{chain.ErrTimeout, "timeout"},
	{chain.ErrUnreachable, "unreachable"},
	{chain.ErrIO, "io"},
	{chain.ErrInvalidParams, "invalid_params"},
	{chain.ErrRPC, "rpc"},
}

// endCall records the call's outcome and ends its span. A tool that ran
// and reported a failure (isError) is an outcome, not a span error; a
// failed request is.
func endCall(span trace.Span, res chain.Response, err error) {
	if span.IsRecording() {
		switch {
		case err != nil:
			outcome := "error"
			for _, f := range failures {
				if errors.Is(err, f.err) {
					outcome = f.name
					break
				}
			}
			span.SetAttributes(AttrOutcome.String(outcome))
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		case res.IsError:
			span.SetAttributes(AttrOutcome.String("tool_error"))
		default:
			span.SetAttributes(AttrOutcome.String("ok"))
		}
	}
	span.End()
}
