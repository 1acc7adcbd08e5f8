package tracing

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func render(kv []attribute.KeyValue) string {
	var s []string
	for _, a := range kv {
		s = append(s, fmt.Sprintf("%s=%s", a.Key, a.Value.Emit()))
	}
	return strings.Join(s, " ")
}

func TestTaskAttributes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		task Task
		want string
	}{
		{"all", Task{Tenant: "acme", Session: "s-1", ID: "t1"}, "warden.tenant=acme warden.session=s-1 warden.task=t1 warden.task.key=s-1/t1"},
		{"no tenant", Task{Session: "s-1", ID: "t2"}, "warden.session=s-1 warden.task=t2 warden.task.key=s-1/t2"},
		{"session only", Task{Tenant: "acme", Session: "s-1"}, "warden.tenant=acme warden.session=s-1"},
		{"none", Task{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := render(tt.task.Attributes()); got != tt.want {
				t.Fatalf("attributes %q, want %q", got, tt.want)
			}
		})
	}
}

// TestStartLabels checks that a span started from a context naming a task
// carries its attributes, and that Label names a span started before. It
// is the only test of the package that installs a global provider.
func TestStartLabels(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	tr := New("test")
	ctx, outer := tr.Start(context.Background(), "http")
	ctx = Label(ctx, Task{Session: "s-1", ID: "t1"})
	ctx = WithTask(ctx, Task{Tenant: "acme", Session: "s-1", ID: "t1"})
	if task, ok := TaskFrom(ctx); !ok || task.Key() != "s-1/t1" {
		t.Fatalf("TaskFrom = %+v, %v", task, ok)
	}
	_, inner := tr.Start(ctx, "task")
	inner.End()
	outer.End()
	got := map[string]string{}
	for _, s := range rec.Ended() {
		got[s.Name()] = render(s.Attributes())
	}
	want := map[string]string{
		"http": "warden.session=s-1 warden.task=t1 warden.task.key=s-1/t1",
		"task": "warden.tenant=acme warden.session=s-1 warden.task=t1 warden.task.key=s-1/t1",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("spans %v, want %v", got, want)
	}
}
