package tracing

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Attribute keys every span started for a task carries (Tracer.Start adds
// them from the context), so that one task's spans can be found among all
// tenants' and sessions': task ids (t1, t2, …) repeat in every session,
// the key does not.
const (
	AttrTenant  = attribute.Key("warden.tenant")
	AttrSession = attribute.Key("warden.session")
	AttrTask    = attribute.Key("warden.task")
	AttrTaskKey = attribute.Key("warden.task.key") // session + "/" + task
)

// Task names the task a span works for.
type Task struct {
	Tenant  string
	Session string
	ID      string
}

// Key is the task's id unique across sessions: session "/" id.
func (t Task) Key() string { return t.Session + "/" + t.ID }

// Attributes are t's span attributes; an empty field is left out, and the
// key is set only when both the session and the id are known.
func (t Task) Attributes() []attribute.KeyValue {
	kv := make([]attribute.KeyValue, 0, 4)
	if t.Tenant != "" {
		kv = append(kv, AttrTenant.String(t.Tenant))
	}
	if t.Session != "" {
		kv = append(kv, AttrSession.String(t.Session))
	}
	if t.ID != "" {
		kv = append(kv, AttrTask.String(t.ID))
	}
	if t.Session != "" && t.ID != "" {
		kv = append(kv, AttrTaskKey.String(t.Key()))
	}
	return kv
}

type taskKey struct{}

// WithTask returns ctx naming t: every span a Tracer starts from it, or
// from a context derived from it, carries t's attributes.
func WithTask(ctx context.Context, t Task) context.Context {
	return context.WithValue(ctx, taskKey{}, t)
}

// TaskFrom returns the task ctx names, if any.
func TaskFrom(ctx context.Context) (Task, bool) {
	t, ok := ctx.Value(taskKey{}).(Task)
	return t, ok
}

// Label sets t's attributes on the span of ctx (one started before the
// task was known, such as an HTTP request's) and returns ctx naming t.
func Label(ctx context.Context, t Task) context.Context {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(t.Attributes()...)
	}
	return WithTask(ctx, t)
}
