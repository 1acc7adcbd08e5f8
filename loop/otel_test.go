package loop_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/internal/tracing"
	"github.com/agentwarden/warden/loop"
)

var (
	spansOnce sync.Once
	spans     *tracetest.SpanRecorder
)

// recordSpans installs one recording provider for the test binary; a test
// tells its spans from others' by its task span's trace.
func recordSpans() {
	spansOnce.Do(func() {
		spans = tracetest.NewSpanRecorder()
		otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))
	})
}

// tree renders the spans of one trace as an indented outline, children in
// the order they started, each with the given attributes.
func tree(id trace.TraceID, keys ...attribute.Key) string {
	var all []sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		if s.SpanContext().TraceID() == id {
			all = append(all, s)
		}
	}
	children := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	for _, s := range all {
		children[s.Parent().SpanID()] = append(children[s.Parent().SpanID()], s)
	}
	for _, c := range children {
		for i := 1; i < len(c); i++ { // insertion sort by start time
			for j := i; j > 0 && c[j].StartTime().Before(c[j-1].StartTime()); j-- {
				c[j], c[j-1] = c[j-1], c[j]
			}
		}
	}
	var b strings.Builder
	var walk func(parent trace.SpanID, depth int)
	walk = func(parent trace.SpanID, depth int) {
		for _, s := range children[parent] {
			fmt.Fprintf(&b, "%s%s", strings.Repeat("  ", depth), s.Name())
			for _, k := range keys {
				for _, kv := range s.Attributes() {
					if kv.Key == k {
						fmt.Fprintf(&b, " %s=%s", k, kv.Value.Emit())
					}
				}
			}
			if s.Status().Code == codes.Error {
				fmt.Fprintf(&b, " error=%q", s.Status().Description)
			}
			b.WriteString("\n")
			walk(s.SpanContext().SpanID(), depth+1)
		}
	}
	walk(trace.SpanID{}, 0)
	return b.String()
}

// TestSpansNest runs a node whose first tool call passes a wasm guard, and
// checks that the spans nest task → node → tool call → plugin call, and
// that the tool call's span names every guard that ran on it.
func TestSpansNest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a wasm guard")
	}
	t.Parallel()
	recordSpans()
	ctx := context.Background()
	h, err := host.New(host.Options{CacheDir: testdata.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(ctx) })
	good, err := h.Load(ctx, host.Source{Name: "good", Bytes: testdata.Bytes(t, "good")}, host.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	guards := nativeGuards()
	guards["ArgPolicy"] = chain.Wasm("ArgPolicy", good)
	hr := newHarness(t, setup{guards: guards, turns: []scripted.Turn{
		turn(call("query_space", `{"spaceName":"市场部"}`)),
		turn(call("builtin_node_finish", `{"output":"市场部空间 42"}`)),
	}, answers: map[string][]answer{"query_space": {{body: spaces}}}})

	tctx, span := loop.StartTaskSpan(ctx, "t1")
	exit, err := hr.runner.Run(tctx, "n1")
	loop.EndTaskSpan(span, loop.TaskExit{Status: exit.Status, Node: "n1"}, err)
	if err != nil || exit.Status != state.Done {
		t.Fatalf("exit %+v, %v", exit, err)
	}
	got := tree(span.SpanContext().TraceID(), loop.AttrTask, loop.AttrNode, loop.AttrSkill, loop.AttrTool, loop.AttrCallID,
		loop.AttrOutcome, loop.AttrCode, loop.AttrStatus, host.AttrPlugin, host.AttrRole, host.AttrPhase, tracing.AttrTenant, tracing.AttrTaskKey,
		loop.AttrGuards)
	// The node, run on its own, names its task for the spans under it.
	want := `warden.task warden.task_id=t1 warden.node_id=n1 warden.status=DONE
  warden.node warden.task_id=t1 warden.node_id=n1 warden.skill=site.builder warden.status=DONE warden.tenant=acme warden.task.key=s1/t1
    warden.tool_call warden.task_id=t1 warden.node_id=n1 warden.tool=query_space warden.call_id=call_1_1 warden.outcome=SUCCESS warden.tenant=acme warden.task.key=s1/t1 warden.guards=["before ArgPolicy good@1.0.0: pass","before ArgBinding argbinding@1.0.0: pass","before ParamContract paramcontract@1.0.0: pass","before Fingerprint fingerprint@1.0.0: pass","before WriteGate writegate@1.0.0: pass","after ResponseContract responsecontract@1.0.0: pass","after WriteGate writegate@1.0.0: pass","after Evidence evidence@1.0.0: pass","after Fingerprint fingerprint@1.0.0: pass"]
      warden.plugin_call warden.tool=query_space warden.outcome=pass warden.plugin=good@1.0.0 warden.plugin.role=guard warden.phase=before warden.tenant=acme warden.task.key=s1/t1
    warden.tool_call warden.task_id=t1 warden.node_id=n1 warden.tool=builtin_node_finish warden.call_id=call_2_1 warden.outcome=SUCCESS warden.tenant=acme warden.task.key=s1/t1
`
	if got != want {
		t.Fatalf("spans:\n%s\nwant:\n%s", got, want)
	}
	// Every event of the node names the node's span, for its log record.
	var nodeSpan string
	for _, s := range spans.Ended() {
		if s.SpanContext().TraceID() == span.SpanContext().TraceID() && s.Name() == loop.SpanNode {
			nodeSpan = s.SpanContext().SpanID().String()
		}
	}
	for _, e := range hr.trace.Events() {
		if e.TraceID != span.SpanContext().TraceID().String() || e.SpanID != nodeSpan {
			t.Errorf("event %s %s under %s/%s, want %s/%s", e.Kind, e.Status, e.TraceID, e.SpanID, span.SpanContext().TraceID(), nodeSpan)
		}
	}
	hr.done()
}

// TestSpanStatus checks the status the loop's span helpers give a task: a
// FAILED task and an error are errors, a suspension is not.
func TestSpanStatus(t *testing.T) {
	t.Parallel()
	recordSpans()
	tests := []struct {
		name string
		exit loop.TaskExit
		err  error
		want string
	}{
		{"done", loop.TaskExit{Status: state.Done}, nil, "warden.task warden.status=DONE\n"},
		{"suspended", loop.TaskExit{Status: state.Suspended, Node: "t1.a"}, nil, "warden.task warden.node_id=t1.a warden.status=SUSPENDED\n"},
		{"failed", loop.TaskExit{Status: state.Failed, Node: "t1.a", Reason: "no progress"}, nil,
			"warden.task warden.node_id=t1.a warden.status=FAILED error=\"no progress\"\n"},
		{"error", loop.TaskExit{}, errors.New("loop: store down"), "warden.task error=\"loop: store down\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, span := loop.StartTaskSpan(context.Background(), "t1")
			loop.EndTaskSpan(span, tt.exit, tt.err)
			if got := tree(span.SpanContext().TraceID(), loop.AttrNode, loop.AttrStatus); got != tt.want {
				t.Fatalf("span %q, want %q", got, tt.want)
			}
		})
	}
}
