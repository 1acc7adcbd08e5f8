package telemetry

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentwarden/warden/internal/model"
)

// modelMetrics are the model provider's counters, registered with the
// first model Metrics.Model wraps.
type modelMetrics struct {
	once     sync.Once
	err      error
	tokens   *prometheus.CounterVec
	failures *prometheus.CounterVec
}

func (m *Metrics) modelCounters() (*modelMetrics, error) {
	mm := &m.model
	mm.once.Do(func() {
		mm.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "warden_model_tokens_total",
			Help: "Tokens the model provider reported, by tenant, model and kind (prompt, completion, cached: the part of prompt served from the provider's cache)."},
			[]string{"tenant", "model", "kind"})
		mm.failures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "warden_model_failures_total",
			Help: "Model calls that failed at the provider, by tenant, model and kind (auth, rate_limited, quota, context_length, unavailable, malformed, bad_request, timeout)."},
			[]string{"tenant", "model", "kind"})
		for _, c := range []prometheus.Collector{mm.tokens, mm.failures} {
			if err := m.reg.Register(c); err != nil {
				mm.err = err
				return
			}
		}
	})
	return mm, mm.err
}

// Model wraps inner so that every turn it plays for tenant counts its
// tokens, and every provider failure its kind, under the model name
// modelName (the operator's, so the label values are bounded).
func (m *Metrics) Model(inner model.Model, tenant, modelName string) (model.Model, error) {
	mm, err := m.modelCounters()
	if err != nil {
		return nil, err
	}
	return &countingModel{inner: inner, c: mm, tenant: tenant, name: modelName}, nil
}

type countingModel struct {
	inner        model.Model
	c            *modelMetrics
	tenant, name string
}

func (cm *countingModel) Complete(ctx context.Context, req model.Request) (model.Response, error) {
	resp, err := cm.inner.Complete(ctx, req)
	if err != nil {
		if kind := model.KindName(err); kind != "" {
			cm.c.failures.WithLabelValues(cm.tenant, cm.name, kind).Inc()
		}
		return resp, err
	}
	u := resp.Usage
	for kind, n := range map[string]int{"prompt": u.PromptTokens, "completion": u.CompletionTokens, "cached": u.CachedTokens} {
		if n > 0 {
			cm.c.tokens.WithLabelValues(cm.tenant, cm.name, kind).Add(float64(n))
		}
	}
	return resp, nil
}
