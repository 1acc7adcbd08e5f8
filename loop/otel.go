package loop

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/internal/tracing"
)

// Span names of the loop. A task's span holds its nodes' spans, a node's
// span its tool calls', and a tool call's span the plugin calls the host
// makes for it (host.SpanPluginCall), because each passes its context on.
const (
	SpanTask     = "warden.task"
	SpanNode     = "warden.node"
	SpanToolCall = "warden.tool_call"
)

// Span attribute keys of the loop.
const (
	AttrTask    = attribute.Key("warden.task_id")
	AttrNode    = attribute.Key("warden.node_id")
	AttrSkill   = attribute.Key("warden.skill")
	AttrTool    = attribute.Key("warden.tool")
	AttrCallID  = attribute.Key("warden.call_id")
	AttrOutcome = attribute.Key("warden.outcome") // the observation's outcome
	AttrCode    = attribute.Key("warden.code")    // the observation's code name
	AttrStatus  = attribute.Key("warden.status")  // a node's or task's status at the span's end
	AttrStalls  = attribute.Key("warden.stalls")  // a node's no-progress count at the span's end
	// AttrGuards lists the guards that ran on a tool call, in chain order,
	// each as "<phase> <guard> <plugin> gen <generation>: <verdict>".
	AttrGuards = attribute.Key("warden.guards")
)

// instrumentation is the scope name of the loop's spans.
const instrumentation = "github.com/agentwarden/warden/loop"

// tracer starts the package's spans; nothing while tracing is off.
var tracer = tracing.New(instrumentation)

func startSpan(ctx context.Context, name string) (context.Context, trace.Span) {
	return tracer.Start(ctx, name)
}

// StartTaskSpan starts the span of one run of a task (RunTask, ResumeTask,
// or a resumption of one of its nodes) on the global tracer provider. Pass
// the returned context on, so the task's node and tool call spans nest
// under it, and end the span with EndTaskSpan.
func StartTaskSpan(ctx context.Context, taskID string) (context.Context, trace.Span) {
	ctx, span := startSpan(ctx, SpanTask)
	if span.IsRecording() {
		span.SetAttributes(AttrTask.String(taskID))
	}
	return ctx, span
}

// startTaskSpan is StartTaskSpan from a context naming the task (its
// tenant, session and id), so that every span under it carries them.
func (r *Runner) startTaskSpan(ctx context.Context, taskID string) (context.Context, trace.Span) {
	ctx, span := StartTaskSpan(r.withTask(ctx, taskID), taskID)
	return ctx, r.openSpan("task "+taskID, span)
}

// openSpan remembers span, while it is open, as the span of the events
// emitted under key (spanOf).
func (r *Runner) openSpan(key string, span trace.Span) trace.Span {
	if !span.IsRecording() {
		return span
	}
	sc := span.SpanContext()
	ids := [2]string{sc.TraceID().String(), sc.SpanID().String()}
	r.spans.Store(key, ids)
	return &openSpan{Span: span, end: func() { r.spans.CompareAndDelete(key, ids) }}
}

// openSpan is a span that forgets itself when it ends.
type openSpan struct {
	trace.Span
	end func()
}

func (s *openSpan) End(opts ...trace.SpanEndOption) {
	s.end()
	s.Span.End(opts...)
}

// spanOf returns the trace and span ids of the open span an event of node
// n happens under: the node's, else its task's; empty when none is open.
func (r *Runner) spanOf(n state.Node) (traceID, spanID string) {
	v, ok := r.spans.Load(n.ID) // a node id is never empty
	if !ok {
		if v, ok = r.spans.Load("task " + n.TaskID); !ok {
			return "", ""
		}
	}
	ids := v.([2]string)
	return ids[0], ids[1]
}

// withTask returns ctx naming the runner's task taskID.
func (r *Runner) withTask(ctx context.Context, taskID string) context.Context {
	if t, ok := tracing.TaskFrom(ctx); ok && t.ID == taskID {
		return ctx
	}
	return tracing.WithTask(ctx, tracing.Task{Tenant: r.cfg.Tenant, Session: r.store.SessionID(), ID: taskID})
}

// EndTaskSpan records how the task stopped (its status, and the node that
// stopped it) and ends the span. An error, or a FAILED task, sets the
// span's status to Error.
func EndTaskSpan(span trace.Span, exit TaskExit, err error) {
	if span.IsRecording() {
		switch {
		case err != nil:
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		default:
			span.SetAttributes(AttrStatus.String(string(exit.Status)))
			if exit.Node != "" {
				span.SetAttributes(AttrNode.String(exit.Node))
			}
			if exit.Status == state.Failed {
				span.SetStatus(codes.Error, exit.Reason)
			}
		}
	}
	span.End()
}

// startNodeSpan starts the span of one Run of a node; the task and skill
// are added by nodeSpanFor once the node is read.
func (r *Runner) startNodeSpan(ctx context.Context, nodeID string) (context.Context, trace.Span) {
	ctx, span := startSpan(ctx, SpanNode)
	if span.IsRecording() {
		span.SetAttributes(AttrNode.String(nodeID))
	}
	return ctx, r.openSpan(nodeID, span)
}

// nodeSpanFor adds what the node is to the node span in ctx, and returns
// ctx naming the node's task: a node run on its own (a resumption) has no
// task span above it.
func (r *Runner) nodeSpanFor(ctx context.Context, n state.Node) context.Context {
	_, named := tracing.TaskFrom(ctx)
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(AttrTask.String(n.TaskID), AttrSkill.String(n.SkillKey))
		if !named {
			span.SetAttributes(tracing.Task{Tenant: r.cfg.Tenant, Session: r.store.SessionID(), ID: n.TaskID}.Attributes()...)
		}
	}
	return r.withTask(ctx, n.TaskID)
}

// endNodeSpan records how the node left the loop and ends the span. An
// error (the host failing), or a FAILED node, sets the status to Error.
func endNodeSpan(span trace.Span, exit Exit, err error) {
	if span.IsRecording() {
		switch {
		case err != nil:
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		default:
			span.SetAttributes(AttrStatus.String(string(exit.Status)))
			if exit.Status == state.Failed {
				span.SetStatus(codes.Error, exit.Reason)
			}
		}
	}
	span.End()
}

// startToolSpan starts the span of one tool call of node n, business or
// builtin; pass the returned context to the call so its plugin calls nest
// under it, and end the span with endToolSpan.
func startToolSpan(ctx context.Context, n state.Node, tool, callID string) (context.Context, trace.Span) {
	ctx, span := startSpan(ctx, SpanToolCall)
	if span.IsRecording() {
		span.SetAttributes(AttrTool.String(tool), AttrCallID.String(callID), AttrTask.String(n.TaskID), AttrNode.String(n.ID))
	}
	return ctx, span
}

// spanGuards names, on a tool call's span, the guards that ran on the
// call with the plugin and generation that served each.
func spanGuards(span trace.Span, steps []chain.Step) {
	if len(steps) == 0 || !span.IsRecording() {
		return
	}
	list := make([]string, len(steps))
	for i, g := range steps {
		list[i] = GuardRun{Guard: g.Guard, Phase: string(g.Phase), Plugin: g.Plugin, Generation: g.Generation,
			Verdict: g.Verdict, Policy: string(g.Policy)}.String()
	}
	span.SetAttributes(AttrGuards.StringSlice(list))
}

// endToolSpan records the call's observation and ends the span. A refusal
// or failure is a value, not a span error: only err (the host failing)
// sets the status to Error.
func endToolSpan(span trace.Span, o abi.Observation, err error) {
	if span.IsRecording() {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		} else {
			span.SetAttributes(AttrOutcome.String(o.Outcome.String()))
			if o.Code != "" {
				span.SetAttributes(AttrCode.String(string(o.Code)))
			}
		}
	}
	span.End()
}
