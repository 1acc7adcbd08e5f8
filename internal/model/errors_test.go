package model_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/model"
)

func TestProviderError(t *testing.T) {
	t.Parallel()
	kinds := []error{model.ErrAuth, model.ErrRateLimited, model.ErrQuota, model.ErrContextLength, model.ErrUnavailable,
		model.ErrMalformed, model.ErrBadRequest, model.ErrTimeout}
	cause := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	tests := []struct {
		name     string
		err      *model.ProviderError
		want     string
		wantKind error
		wantName string
	}{
		{
			name:     "status, code and message",
			err:      &model.ProviderError{Kind: model.ErrRateLimited, Status: 429, Code: "rate_limit_exceeded", Message: "slow down", RetryAfter: time.Second, Attempts: 4},
			want:     "model: provider rate limited: HTTP 429 (rate_limit_exceeded): slow down (after 4 attempts)",
			wantKind: model.ErrRateLimited, wantName: "rate_limited",
		},
		{
			name:     "an exhausted quota is its own kind, not a rate limit",
			err:      &model.ProviderError{Kind: model.ErrQuota, Status: 429, Type: "insufficient_quota", Code: "insufficient_quota", Message: "You exceeded your current quota."},
			want:     "model: provider quota exhausted: HTTP 429 (insufficient_quota): You exceeded your current quota.",
			wantKind: model.ErrQuota, wantName: "quota",
		},
		{
			name:     "status text without a code",
			err:      &model.ProviderError{Kind: model.ErrUnavailable, Status: 503, Message: "overloaded", Attempts: 1},
			want:     "model: provider unavailable: HTTP 503 Service Unavailable: overloaded",
			wantKind: model.ErrUnavailable, wantName: "unavailable",
		},
		{
			name:     "a code without a status",
			err:      &model.ProviderError{Kind: model.ErrContextLength, Code: "context_length_exceeded", Message: "too long"},
			want:     "model: context length exceeded: (context_length_exceeded): too long",
			wantKind: model.ErrContextLength, wantName: "context_length",
		},
		{
			name:     "transport failure",
			err:      &model.ProviderError{Kind: model.ErrUnavailable, Message: "dial tcp: connection refused", Err: cause},
			want:     "model: provider unavailable: dial tcp: connection refused",
			wantKind: model.ErrUnavailable, wantName: "unavailable",
		},
		{
			name:     "timeout",
			err:      &model.ProviderError{Kind: model.ErrTimeout, Message: "the call deadline passed", Err: context.DeadlineExceeded},
			want:     "model: provider timed out: the call deadline passed",
			wantKind: model.ErrTimeout, wantName: "timeout",
		},
		{name: "no kind", err: &model.ProviderError{Status: 418}, want: "model: provider failed: HTTP 418 I'm a teapot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			wrapped := fmt.Errorf("model/openai: %w", tt.err)
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
			for _, k := range kinds {
				if got := errors.Is(wrapped, k); got != (k == tt.wantKind) {
					t.Errorf("errors.Is(err, %v) = %t", k, got)
				}
			}
			if got := model.KindName(wrapped); got != tt.wantName {
				t.Errorf("KindName = %q, want %q", got, tt.wantName)
			}
			var pe *model.ProviderError
			if !errors.As(wrapped, &pe) || pe != tt.err {
				t.Errorf("errors.As did not find the ProviderError")
			}
			if tt.err.Err != nil && !errors.Is(wrapped, tt.err.Err) {
				t.Errorf("the cause is not unwrapped")
			}
		})
	}
	if got := model.KindName(errors.New("other")); got != "" {
		t.Errorf("KindName(other) = %q, want empty", got)
	}
}
