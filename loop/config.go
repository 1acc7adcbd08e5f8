package loop

import (
	"fmt"
	"time"

	"github.com/agentwarden/warden/abi"
)

// The spec's defaults, and ours where the spec gives none (docs/RATIONALE.md
// should carry the why).
const (
	// DefaultNoProgressLimit is the number of consecutive no-progress turns
	// that fails a node. TOOL_OBSERVATION gives no number; its §1 incident
	// (five rejected builtin_output_set calls, then "连续无进展" failed the
	// node) shows the runtime it describes stopping at five, so we do too.
	DefaultNoProgressLimit = 5
	// DefaultMaxRounds bounds the model turns of a node, the backstop that
	// TOOL_OBSERVATION §3 leaves DEFERRED to. The spec gives no number.
	DefaultMaxRounds = 20
	// DefaultDelegateMaxDepth is state.delegate-max-depth (CONTRACT_SPEC §15).
	DefaultDelegateMaxDepth = 2
	// DefaultReconfirmAfter is state.reconfirm-after (CONTRACT_SPEC §14.1).
	DefaultReconfirmAfter = 24 * time.Hour
)

// The context budgets, sized for a model with a 32k-token window (the
// smallest window of the models Warden is run with). Tokens are estimated
// from bytes (EstimateTokens), never counted with a tokenizer: the loop
// does not know the model's.
const (
	// DefaultToolResultBudget bounds the result JSON of one tool message,
	// in bytes: 8 KiB is about 2.5k tokens of JSON, so eight results fit in
	// the history beside the prompt and the catalog before the oldest are
	// compacted. Under the Evidence guard's 16 KiB, so that a cut result
	// is always a prefix of what the evidence holds.
	DefaultToolResultBudget = 8 << 10
	// DefaultPromptTokens bounds the system prompt without the catalog.
	DefaultPromptTokens = 4096
	// DefaultCatalogTokens bounds the tool catalog: the tool definitions
	// sent with the request and the catalogue section of the prompt.
	DefaultCatalogTokens = 6144
	// DefaultContextTokens bounds a whole request: 32k minus 8k kept for
	// the model's answer.
	DefaultContextTokens = 24 << 10
)

// Config holds the loop's limits. Start from DefaultConfig; New validates
// it once and never fills a zero in later.
type Config struct {
	// NoProgressLimit: the node fails when this many consecutive turns made
	// no progress (§6).
	NoProgressLimit int
	// MaxRounds: the node fails after this many model turns without leaving
	// the loop.
	MaxRounds int
	// DelegateMaxDepth: a delegated node's depth may not exceed it.
	DelegateMaxDepth int
	// ReconfirmAfter: a CONFIRM that arrives later than this after the
	// approval was asked does not run the write; the user is asked again.
	ReconfirmAfter time.Duration
	// Locale of every model-facing text.
	Locale abi.Locale
	// Tenant whose plugin instances run the node's calls.
	Tenant string
	// Now is the clock of approvals; nil means time.Now.
	Now func() time.Time
	// Reflect adds the diagnose and fix-proposal steps of
	// TOOL_USE_RELIABILITY (二、2) to the prompt after a turn that ended
	// on a non-success. The observation's next step stays what to do.
	Reflect bool
	// ToolResultBudget bounds the result JSON of a success's tool message,
	// in bytes; a longer result is cut on a JSON boundary (ToolMessage).
	ToolResultBudget int
	// PromptTokens bounds the system prompt without its catalogue; the
	// skill manual and the agent's texts are shortened to fit.
	PromptTokens int
	// CatalogTokens bounds the tool definitions and the catalogue section;
	// descriptions are shortened to fit.
	CatalogTokens int
	// ContextTokens bounds a whole request; when the history would
	// overflow it, the oldest tool results are replaced by stubs with
	// their evidence id (Compact).
	ContextTokens int
}

// DefaultConfig returns the spec's defaults.
func DefaultConfig() Config {
	return Config{
		NoProgressLimit:  DefaultNoProgressLimit,
		MaxRounds:        DefaultMaxRounds,
		DelegateMaxDepth: DefaultDelegateMaxDepth,
		ReconfirmAfter:   DefaultReconfirmAfter,
		Locale:           abi.LocaleZH,
		Reflect:          true,
		ToolResultBudget: DefaultToolResultBudget,
		PromptTokens:     DefaultPromptTokens,
		CatalogTokens:    DefaultCatalogTokens,
		ContextTokens:    DefaultContextTokens,
	}
}

// minToolResultBudget is the least ToolResultBudget: room for an error
// envelope and a few records.
const minToolResultBudget = 256

// Validate reports a limit that is missing or out of range.
func (c Config) Validate() error {
	switch {
	case c.NoProgressLimit < 1:
		return fmt.Errorf("loop: no-progress limit %d: %w", c.NoProgressLimit, ErrInvalidConfig)
	case c.MaxRounds < 1:
		return fmt.Errorf("loop: max rounds %d: %w", c.MaxRounds, ErrInvalidConfig)
	case c.DelegateMaxDepth < 0:
		return fmt.Errorf("loop: delegate max depth %d: %w", c.DelegateMaxDepth, ErrInvalidConfig)
	case c.ReconfirmAfter <= 0:
		return fmt.Errorf("loop: reconfirm-after %v: %w", c.ReconfirmAfter, ErrInvalidConfig)
	case c.ToolResultBudget < minToolResultBudget:
		return fmt.Errorf("loop: tool result budget %d bytes, the least is %d: %w", c.ToolResultBudget, minToolResultBudget, ErrInvalidConfig)
	case c.PromptTokens < 1 || c.CatalogTokens < 1:
		return fmt.Errorf("loop: prompt budget %d, catalog budget %d tokens: %w", c.PromptTokens, c.CatalogTokens, ErrInvalidConfig)
	case c.ContextTokens < c.PromptTokens+c.CatalogTokens:
		return fmt.Errorf("loop: context budget %d tokens is less than the prompt's and the catalog's %d: %w",
			c.ContextTokens, c.PromptTokens+c.CatalogTokens, ErrInvalidConfig)
	}
	return nil
}
