package telemetry_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/telemetry"
)

// turnsModel answers with its turns in order, then with err.
type turnsModel struct {
	turns []model.Response
	err   error
}

func (m *turnsModel) Complete(context.Context, model.Request) (model.Response, error) {
	if len(m.turns) == 0 {
		return model.Response{}, m.err
	}
	r := m.turns[0]
	m.turns = m.turns[1:]
	return r, nil
}

func TestModelMetrics(t *testing.T) {
	t.Parallel()
	m := newMetrics(t, telemetry.MetricsOptions{})
	inner := &turnsModel{
		turns: []model.Response{
			{Usage: model.Usage{PromptTokens: 1200, CompletionTokens: 30, TotalTokens: 1230, CachedTokens: 1024}},
			{Usage: model.Usage{PromptTokens: 1300, CompletionTokens: 12, TotalTokens: 1312}},
		},
		err: &model.ProviderError{Kind: model.ErrRateLimited, Status: 429},
	}
	acme, err := m.Model(inner, "acme", "gpt-test")
	if err != nil {
		t.Fatal(err)
	}
	globex, err := m.Model(&turnsModel{err: context.Canceled}, "globex", "gpt-test")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_, _ = acme.Complete(context.Background(), model.Request{})
	}
	if _, err := globex.Complete(context.Background(), model.Request{}); err != context.Canceled {
		t.Fatalf("error = %v, want it passed through", err)
	}
	got := series(scrape(t, m), "warden_model_")
	want := []string{
		`warden_model_failures_total{kind="rate_limited",model="gpt-test",tenant="acme"} 1`,
		`warden_model_tokens_total{kind="cached",model="gpt-test",tenant="acme"} 1024`,
		`warden_model_tokens_total{kind="completion",model="gpt-test",tenant="acme"} 42`,
		`warden_model_tokens_total{kind="prompt",model="gpt-test",tenant="acme"} 2500`,
	}
	if w := strings.Join(want, "\n"); got != w {
		t.Errorf("series:\n got %s\nwant %s", got, w)
	}
}
