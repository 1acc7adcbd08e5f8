package host_test

import (
	"context"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/testdata"
)

var (
	spansOnce sync.Once
	spans     *tracetest.SpanRecorder
	testTP    *sdktrace.TracerProvider
)

// recordSpans installs one recording provider for the test binary; each test
// tells its spans from others' by the trace of a root span of its own.
func recordSpans() {
	spansOnce.Do(func() {
		spans = tracetest.NewSpanRecorder()
		testTP = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
		otel.SetTracerProvider(testTP)
	})
}

// traceOf returns the ended spans of one trace, in the order they ended.
func traceOf(id trace.TraceID) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		if s.SpanContext().TraceID() == id {
			out = append(out, s)
		}
	}
	return out
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value.Emit()
	}
	return m
}

// TestPluginCallSpan checks the span of each kind of plugin call: its name,
// its parent, its attributes and its status.
func TestPluginCallSpan(t *testing.T) {
	t.Parallel()
	recordSpans()
	h := newHost(t)
	good := load(t, h, "good", host.Policy{})
	tests := []struct {
		name    string
		plugin  func(t *testing.T) *host.Plugin
		builtin bool
		args    string
		want    map[attribute.Key]string
		status  codes.Code
		desc    string
	}{
		{"pass", func(*testing.T) *host.Plugin { return good }, false, `{}`,
			map[attribute.Key]string{host.AttrOutcome: "pass", host.AttrPolicy: "closed"}, codes.Unset, ""},
		{"rejected", func(*testing.T) *host.Plugin { return good }, false, `{"reject":true}`,
			map[attribute.Key]string{host.AttrOutcome: "REJECTED", host.AttrCode: "ARG_REJECTED", host.AttrPolicy: "closed"}, codes.Unset, ""},
		{"trap", func(t *testing.T) *host.Plugin { return load(t, h, "panichandler", fast) }, false, `{}`,
			map[attribute.Key]string{host.AttrOutcome: "REJECTED", host.AttrCode: "PLUGIN_TRAP", host.AttrPolicy: "closed"}, codes.Error, "plugin trapped"},
		{"timeout", func(t *testing.T) *host.Plugin { return load(t, h, "loop", fast) }, false, `{}`,
			map[attribute.Key]string{host.AttrOutcome: "REJECTED", host.AttrCode: "PLUGIN_TIMEOUT", host.AttrPolicy: "closed"}, codes.Error, "plugin timed out"},
		{"trap failing open", func(t *testing.T) *host.Plugin {
			return load(t, h, "panichandler", host.Policy{Limits: fast.Limits, Failure: host.FailOpen})
		}, false, `{}`,
			map[attribute.Key]string{host.AttrOutcome: "pass", host.AttrPolicy: "open"}, codes.Error, "plugin trapped"},
		{"guard called as builtin", func(*testing.T) *host.Plugin { return good }, true, `{}`,
			map[attribute.Key]string{host.AttrOutcome: "REJECTED", host.AttrCode: "CATALOG_DENIED"}, codes.Unset, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := tt.plugin(t)
			ctx, root := testTP.Tracer("test").Start(context.Background(), "root")
			req := before(tt.args)
			role := "guard"
			if tt.builtin {
				p.Builtin(ctx, "tenant-a", req)
				role = "builtin"
			} else {
				p.Guard(ctx, "tenant-a", req)
			}
			root.End()
			got := traceOf(root.SpanContext().TraceID())
			if len(got) != 2 || got[0].Name() != host.SpanPluginCall || got[1].Name() != "root" {
				t.Fatalf("spans %v, want %s then root", names(got), host.SpanPluginCall)
			}
			s := got[0]
			if s.Parent().SpanID() != root.SpanContext().SpanID() {
				t.Fatalf("parent %s, want the root %s", s.Parent().SpanID(), root.SpanContext().SpanID())
			}
			want := map[attribute.Key]string{host.AttrPlugin: p.Ref(), host.AttrDigest: p.Digest(), host.AttrRole: role,
				host.AttrTool: "create_site", host.AttrTenant: "tenant-a", host.AttrPhase: "before"}
			for k, v := range tt.want {
				want[k] = v
			}
			if a := attrs(s); !equalAttrs(a, want) {
				t.Fatalf("attributes %v, want %v", a, want)
			}
			if st := s.Status(); st.Code != tt.status || st.Description != tt.desc {
				t.Fatalf("status %v %q, want %v %q", st.Code, st.Description, tt.status, tt.desc)
			}
		})
	}
}

// TestPluginCallSpanGeneration checks that a slot's calls carry the
// generation serving them.
func TestPluginCallSpanGeneration(t *testing.T) {
	t.Parallel()
	recordSpans()
	h := newHost(t)
	ctx := context.Background()
	slot, err := h.NewSlot(ctx, "good", host.Source{Name: "good", Bytes: testdata.Bytes(t, "good")}, host.Policy{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(slot.Close)
	if _, err := slot.Swap(ctx, host.Source{Name: "goodv2", Bytes: testdata.Bytes(t, "goodv2")}, host.Policy{}, nil); err != nil {
		t.Fatal(err)
	}
	if g := slot.Plugin().Generation(); g != 2 {
		t.Fatalf("generation %d, want 2", g)
	}
	rctx, root := testTP.Tracer("test").Start(ctx, "root")
	slot.Guard(rctx, "tenant-a", before(`{}`))
	root.End()
	got := traceOf(root.SpanContext().TraceID())
	if len(got) != 2 {
		t.Fatalf("spans %v", names(got))
	}
	a := attrs(got[0])
	if a[host.AttrGeneration] != "2" || a[host.AttrPlugin] != "good@2.0.0" {
		t.Fatalf("attributes %v, want generation 2 of good@2.0.0", a)
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

func equalAttrs(a, b map[attribute.Key]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
