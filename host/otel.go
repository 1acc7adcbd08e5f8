package host

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/tracing"
)

// SpanPluginCall is the name of the span around one Guard or Builtin call.
// Invoke, the raw decision without a failure policy, has no span of its own.
const SpanPluginCall = "warden.plugin_call"

// Span attribute keys of a plugin call.
const (
	AttrPlugin     = attribute.Key("warden.plugin")            // name@version
	AttrDigest     = attribute.Key("warden.plugin.digest")     // hex sha256 of the module
	AttrGeneration = attribute.Key("warden.plugin.generation") // slot generation, when in a slot
	AttrRole       = attribute.Key("warden.plugin.role")       // guard | builtin: how it was called
	AttrPolicy     = attribute.Key("warden.plugin.policy")     // failure policy of a guard
	AttrPhase      = attribute.Key("warden.phase")
	AttrTool       = attribute.Key("warden.tool")
	AttrTenant     = attribute.Key("warden.tenant")
	AttrOutcome    = attribute.Key("warden.outcome") // pass, or the observation's outcome
	AttrCode       = attribute.Key("warden.code")    // the observation's code name
)

// instrumentation is the scope name of the host's spans.
const instrumentation = "github.com/agentwarden/warden/host"

// tracer starts the package's spans; nothing while tracing is off.
var tracer = tracing.New(instrumentation)

func startSpan(ctx context.Context, name string) (context.Context, trace.Span) {
	return tracer.Start(ctx, name)
}

// Generation is the slot generation p serves as (1 for a slot's first), or
// 0 for a plugin loaded outside a slot.
func (p *Plugin) Generation() uint64 { return p.generation.Load() }

// startCall starts a plugin call's span. Attributes are set only when the
// span records, so the default no-op provider pays for no attribute.
func (p *Plugin) startCall(ctx context.Context, role abi.Role, tenant string, req *abi.Request) (context.Context, trace.Span) {
	ctx, span := startSpan(ctx, SpanPluginCall)
	if span.IsRecording() {
		span.SetAttributes(AttrPlugin.String(p.ref), AttrDigest.String(p.digest),
			AttrRole.String(string(role)), AttrTool.String(req.Tool), AttrTenant.String(tenant))
		if g := p.generation.Load(); g != 0 {
			span.SetAttributes(AttrGeneration.Int64(int64(g)))
		}
		if req.Phase != "" {
			span.SetAttributes(AttrPhase.String(string(req.Phase)))
		}
		if role == abi.RoleGuard {
			span.SetAttributes(AttrPolicy.String(string(p.policy.Failure)))
		}
	}
	return ctx, span
}

// endCall records what the call came to and ends its span: v is the verdict
// returned (after the failure policy), err the plugin's own failure, if any.
// A failure of the plugin (trap, timeout, memory, broken contract,
// unavailable) sets the span's status to Error even when a fail-open or
// shadow policy let the call pass.
func endCall(span trace.Span, v abi.Verdict, err error) {
	if span.IsRecording() {
		switch {
		case v.Pass:
			span.SetAttributes(AttrOutcome.String("pass"))
		case v.Observation != nil:
			span.SetAttributes(AttrOutcome.String(v.Observation.Outcome.String()), AttrCode.String(string(v.Observation.Code)))
		}
		if err != nil {
			desc := err.Error()
			var ce *CallError
			if errors.As(err, &ce) && ce.Kind != nil {
				desc = ce.Kind.Error()
			}
			span.RecordError(err)
			span.SetStatus(codes.Error, desc)
		}
	}
	span.End()
}
