package main

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/model/openai"
)

// exitProvider is warden run's exit code when the model provider failed
// (authentication, rate limit, context length, unavailable, malformed
// reply, timeout): not the scenario's fault, and not a usage error.
const exitProvider = 3

// exitQuota is warden run's exit code when the provider's account has no
// quota or credit left: unlike the failures of exitProvider, running again
// cannot help until the operator refills it.
const exitQuota = 4

// providerExit is the exit code of a run that stopped because the
// provider failed with pe.
func providerExit(pe *model.ProviderError) int {
	if errors.Is(pe, model.ErrQuota) {
		return exitQuota
	}
	return exitProvider
}

// modelKeys are the OpenAI-compatible model's settings that warden run
// takes as flags and warden serve as keys, under the same names.
type modelKeys struct {
	AttemptTimeout time.Duration
	CallTimeout    time.Duration
	MaxRetries     int
	Backoff        time.Duration
	MaxBackoff     time.Duration
	Stream         bool
	Strict         bool
	// Parallel is "parallel_tool_calls"; nil leaves the provider's default.
	Parallel   *bool
	ToolChoice string
}

// The keys, as flags (--model-call-timeout) and serve keys.
const (
	keyAttemptTimeout = "model-attempt-timeout"
	keyCallTimeout    = "model-call-timeout"
	keyMaxRetries     = "model-max-retries"
	keyBackoff        = "model-backoff"
	keyMaxBackoff     = "model-max-backoff"
	keyStream         = "model-stream"
	keyStrict         = "model-strict"
	keyParallel       = "model-parallel-tool-calls"
	keyToolChoice     = "model-tool-choice"
)

// maxModelRetries bounds model-max-retries: beyond it a call mostly waits.
const maxModelRetries = 10

// defaultModelKeys are openai.Defaults' limits.
func defaultModelKeys() modelKeys {
	d := openai.Defaults("", "", "")
	return modelKeys{AttemptTimeout: d.AttemptTimeout, CallTimeout: d.CallTimeout, MaxRetries: d.MaxRetries,
		Backoff: d.InitialBackoff, MaxBackoff: d.MaxBackoff, Strict: d.Strict}
}

// modelKeyError names the key a bad model setting came from.
type modelKeyError struct{ key, msg string }

func (e *modelKeyError) Error() string { return "--" + e.key + ": " + e.msg }

// validate checks the settings together, naming the first bad key.
func (k modelKeys) validate() *modelKeyError {
	bad := func(key, format string, a ...any) *modelKeyError {
		return &modelKeyError{key, fmt.Sprintf(format, a...)}
	}
	switch {
	case k.AttemptTimeout <= 0:
		return bad(keyAttemptTimeout, "%s is not positive", k.AttemptTimeout)
	case k.CallTimeout <= 0:
		return bad(keyCallTimeout, "%s is not positive", k.CallTimeout)
	case k.AttemptTimeout > k.CallTimeout:
		return bad(keyAttemptTimeout, "%s exceeds --%s %s", k.AttemptTimeout, keyCallTimeout, k.CallTimeout)
	case k.MaxRetries < 0 || k.MaxRetries > maxModelRetries:
		return bad(keyMaxRetries, "%d is not between 0 and %d", k.MaxRetries, maxModelRetries)
	case k.Backoff <= 0:
		return bad(keyBackoff, "%s is not positive", k.Backoff)
	case k.MaxBackoff < k.Backoff:
		return bad(keyMaxBackoff, "%s is below --%s %s", k.MaxBackoff, keyBackoff, k.Backoff)
	}
	switch model.ToolChoiceMode(k.ToolChoice) {
	case model.ToolChoiceDefault, model.ToolChoiceAuto, model.ToolChoiceNone, model.ToolChoiceRequired:
	default:
		return bad(keyToolChoice, "%q is not auto, none or required", k.ToolChoice)
	}
	return nil
}

// config is the client configuration for an endpoint with these settings.
func (k modelKeys) config(baseURL, apiKey, name string) openai.Config {
	c := openai.Defaults(baseURL, apiKey, name)
	c.AttemptTimeout, c.CallTimeout, c.MaxRetries = k.AttemptTimeout, k.CallTimeout, k.MaxRetries
	c.InitialBackoff, c.MaxBackoff = k.Backoff, k.MaxBackoff
	c.Stream, c.Strict, c.ParallelToolCalls = k.Stream, k.Strict, k.Parallel
	c.ToolChoice = model.ToolChoiceMode(k.ToolChoice)
	return c
}

// optionalBool is a flag.Value for a bool that may be left unset.
type optionalBool struct{ p **bool }

func (o optionalBool) String() string {
	if o.p == nil || *o.p == nil {
		return ""
	}
	return strconv.FormatBool(**o.p)
}

func (o optionalBool) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("not a bool")
	}
	*o.p = &b
	return nil
}

// fileInt reads an integer a config file gave: YAML and TOML decode one as
// an int, JSON as a float64 that must be whole.
func fileInt(v any) (int, error) {
	switch n := v.(type) {
	case int:
		return n, nil
	case int64:
		return int(n), nil
	case float64:
		if n == float64(int(n)) {
			return int(n), nil
		}
	}
	return 0, errors.New("not an integer")
}
