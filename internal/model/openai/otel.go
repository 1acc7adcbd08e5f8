package openai

import (
	"context"
	"errors"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/tracing"
)

// Span attribute keys of a model call, from OpenTelemetry's semantic
// conventions for generative AI clients.
const (
	AttrOperation     = attribute.Key("gen_ai.operation.name")
	AttrSystem        = attribute.Key("gen_ai.system")
	AttrRequestModel  = attribute.Key("gen_ai.request.model")
	AttrInputTokens   = attribute.Key("gen_ai.usage.input_tokens")
	AttrOutputTokens  = attribute.Key("gen_ai.usage.output_tokens")
	AttrFinishReasons = attribute.Key("gen_ai.response.finish_reasons")
	AttrErrorType     = attribute.Key("error.type")
)

// tracer starts the package's spans; nothing while tracing is off.
var tracer = tracing.New("github.com/agentwarden/warden/internal/model/openai")

// startCall starts the client span of one Complete: "chat MODEL", as the
// conventions name it. Retries are inside it.
func (c *Client) startCall(ctx context.Context) (context.Context, trace.Span) {
	ctx, span := tracer.Start(ctx, "chat "+c.cfg.Model, trace.WithSpanKind(trace.SpanKindClient))
	if span.IsRecording() {
		span.SetAttributes(AttrOperation.String("chat"), AttrSystem.String("openai"), AttrRequestModel.String(c.cfg.Model))
	}
	return ctx, span
}

// endCall records the answer's token usage and finish reason, or the
// failure (its kind as error.type), and ends the span.
func endCall(span trace.Span, resp model.Response, err error) {
	if span.IsRecording() {
		if err != nil {
			kind := "other"
			var pe *model.ProviderError
			if errors.As(err, &pe) && pe.Kind != nil {
				kind = strings.TrimPrefix(pe.Kind.Error(), "model: ")
			}
			span.SetAttributes(AttrErrorType.String(kind))
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		} else {
			span.SetAttributes(AttrInputTokens.Int(resp.Usage.PromptTokens), AttrOutputTokens.Int(resp.Usage.CompletionTokens))
			if resp.FinishReason != "" {
				span.SetAttributes(AttrFinishReasons.StringSlice([]string{string(resp.FinishReason)}))
			}
		}
	}
	span.End()
}
