package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/loop"
)

// runFailure names what failed by its kind and never quotes the error,
// except the validation detail of an invalid model request, bounded.
func TestRunFailure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"run timeout", fmt.Errorf("loop: node t1.n1: %w", context.DeadlineExceeded), "the run exceeded its time limit (run-timeout)"},
		{"invalid model request", fmt.Errorf("loop: node t1.n1: %w: %w", loop.ErrModel, fmt.Errorf("%w: message 2: duplicate tool call id %q", model.ErrInvalidRequest, "call_x")),
			`the request for the model was invalid before it was sent (message 2: duplicate tool call id "call_x")`},
		{"a long validation detail is bounded", fmt.Errorf("%w: %s", model.ErrInvalidRequest, strings.Repeat("x", 300)),
			"the request for the model was invalid before it was sent (" + strings.Repeat("x", 200) + "…)"},
		{"a model call without a provider answer", fmt.Errorf("loop: node t1.n1: %w: %w", loop.ErrModel, errors.New("dial tcp: token=sk-1")),
			"the model call failed without an answer from the provider"},
		{"another instance", fmt.Errorf("server: %w", store.ErrOwned), "another instance took the session over"},
		{"the store", fmt.Errorf("store: append: %w", store.ErrInvalid), "the session store failed"},
		{"a plugin closed", fmt.Errorf("loop: %w", host.ErrClosed), "a plugin was closed while the task ran"},
		{"anything else quotes nothing", errors.New("postgres://warden:hunter2@db/warden: connection refused"), "an internal error of the runtime"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := runFailure(tt.err); got != tt.want {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
