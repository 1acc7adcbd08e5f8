package openai

import (
	"errors"
	"testing"

	"github.com/agentwarden/warden/internal/model"
)

func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		change  func(*Config)
		wantErr string
	}{
		{name: "defaults", change: func(*Config) {}},
		{name: "no retries needs no backoff", change: func(c *Config) { c.MaxRetries, c.InitialBackoff, c.MaxBackoff = 0, 0, 0 }},
		{name: "empty base URL", change: func(c *Config) { c.BaseURL = "" }, wantErr: "model/openai: invalid config: base URL is empty"},
		{name: "relative base URL", change: func(c *Config) { c.BaseURL = "api/v1" }, wantErr: `model/openai: invalid config: base URL "api/v1" is not an http(s) URL with a host`},
		{name: "other scheme", change: func(c *Config) { c.BaseURL = "ftp://h/v1" }, wantErr: `model/openai: invalid config: base URL "ftp://h/v1" is not an http(s) URL with a host`},
		{name: "query", change: func(c *Config) { c.BaseURL = "https://h/v1?x=1" }, wantErr: `model/openai: invalid config: base URL "https://h/v1?x=1" has a query or fragment`},
		{name: "key with newline", change: func(c *Config) { c.APIKey = "sk\nX-Evil: 1" }, wantErr: "model/openai: invalid config: API key contains a line break"},
		{name: "no model", change: func(c *Config) { c.Model = "" }, wantErr: "model/openai: invalid config: model is empty"},
		{name: "no attempt timeout", change: func(c *Config) { c.AttemptTimeout = 0 }, wantErr: "model/openai: invalid config: attempt timeout 0s is not positive"},
		{name: "no call timeout", change: func(c *Config) { c.CallTimeout = -1 }, wantErr: "model/openai: invalid config: call timeout -1ns is not positive"},
		{name: "negative retries", change: func(c *Config) { c.MaxRetries = -1 }, wantErr: "model/openai: invalid config: max retries -1 is negative"},
		{name: "retries without backoff", change: func(c *Config) { c.InitialBackoff = 0 }, wantErr: "model/openai: invalid config: initial backoff 0s is not positive"},
		{name: "max below initial", change: func(c *Config) { c.MaxBackoff = 1 }, wantErr: "model/openai: invalid config: max backoff 1ns is below initial backoff 1s"},
		{name: "tool choice required", change: func(c *Config) { c.ToolChoice = model.ToolChoiceRequired }},
		{name: "tool choice function", change: func(c *Config) { c.ToolChoice = model.ToolChoiceFunction }, wantErr: `model/openai: invalid config: tool choice "function" is not auto, none or required`},
		{name: "tool choice unknown", change: func(c *Config) { c.ToolChoice = "any" }, wantErr: `model/openai: invalid config: tool choice "any" is not auto, none or required`},
		{name: "no body limit", change: func(c *Config) { c.MaxResponseBytes = 0 }, wantErr: "model/openai: invalid config: max response bytes 0 is not positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := Defaults("https://api.example.com/v1", "sk-x", "gpt-test")
			tt.change(&cfg)
			_, err := New(cfg)
			got := ""
			if err != nil {
				got = err.Error()
				if !errors.Is(err, ErrConfig) {
					t.Errorf("errors.Is(err, ErrConfig) = false")
				}
			}
			if got != tt.wantErr {
				t.Errorf("New error = %q, want %q", got, tt.wantErr)
			}
		})
	}
}
