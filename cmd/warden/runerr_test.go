package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/fakeprovider"
	"github.com/agentwarden/warden/internal/model"
)

// warden run --model openai reports a run that stopped on an error that is
// not the provider's (here the call cancelled while the provider holds its
// answer back): the error is printed and the exit is 1, not "DONE".
func TestRunOpenAIRunError(t *testing.T) {
	t.Parallel()
	srv := fakeprovider.New(t, fakeprovider.Reply{Content: "late", Delay: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for len(srv.Requests()) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	var out, errb bytes.Buffer
	code := cmdRun(ctx, []string{"--model", "openai", "--base-url", srv.BaseURL(), "--model-name", "gpt-test",
		acceptance + "07-tool-timeout.yaml"}, &out, &errb)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	const wantErr = `level=WARN msg="model/openai: tool sent without strict schema" tool=builtin_state_set reason="$.properties.value: strict mode needs a type"` + "\n" +
		"warden run: 07 a business tool times out: loop: node n1: model: model/openai: call cancelled: context canceled\n"
	if errb.String() != wantErr {
		t.Errorf("stderr:\n%s\nwant:\n%s", errb.String(), wantErr)
	}
	const wantOut = "--- ERROR (the run failed) 07 a business tool times out: node RUNNING, task RUNNING"
	if !strings.Contains(out.String(), wantOut) {
		t.Errorf("stdout lacks %q:\n%s", wantOut, out.String())
	}
}

type turns struct{ errs []error }

func (m *turns) Complete(context.Context, model.Request) (model.Response, error) {
	err := m.errs[0]
	m.errs = m.errs[1:]
	return model.Response{}, err
}

// The first provider failure is the one reported, whatever the turns after
// it did.
func TestFailureRecorderKeepsFirst(t *testing.T) {
	t.Parallel()
	rate := &model.ProviderError{Kind: model.ErrRateLimited, Message: "first"}
	auth := &model.ProviderError{Kind: model.ErrAuth, Message: "second"}
	tests := []struct {
		name string
		errs []error
		want *model.ProviderError
	}{
		{"none", []error{nil, nil}, nil},
		{"a later success does not clear it", []error{rate, nil}, rate},
		{"a later failure does not replace it", []error{nil, rate, auth}, rate},
		{"wrapped", []error{errors.Join(errors.New("loop"), rate)}, rate},
		{"not a provider failure", []error{context.Canceled}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := &failureRecorder{Model: &turns{errs: tt.errs}}
			for range tt.errs {
				_, _ = r.Complete(t.Context(), model.Request{})
			}
			if got := r.failure(); got != tt.want {
				t.Fatalf("failure() = %v, want %v", got, tt.want)
			}
		})
	}
}
