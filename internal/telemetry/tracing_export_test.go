package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
)

// SetupOTLPNoRetry is SetupTracing("otlp:"+endpoint) with the exporter's
// retries off, so that a failed export is reported at once.
func SetupOTLPNoRetry(endpoint string) (func(context.Context) error, error) {
	installGlobals()
	return setupOTLP(endpoint, nil, otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
}
