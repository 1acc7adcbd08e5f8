package server

import (
	"fmt"
	"maps"
	"slices"

	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/loop"
)

// StateSettings are the state.* settings of a session's store
// (CONTRACT_SPEC §13, §14.1).
type StateSettings struct {
	// BypassTools is state.write-confirm-bypass-tools: with confirm: false
	// in the tool's contract, the writes that run without approval.
	BypassTools []string
	// FingerprintLimit is how many identical successful calls trip
	// FINGERPRINT_TRIP; 0 means the store's default, 3.
	FingerprintLimit int
	// RepeatTools may repeat with the same arguments without tripping it.
	RepeatTools []string
}

// AgentSettings are the settings of one agent's sessions: they replace
// Options.Loop and Options.State whole for the agent they are keyed by
// (Options.AgentSettings).
type AgentSettings struct {
	Loop  loop.Config
	State StateSettings
}

func (st StateSettings) validate() error {
	if st.FingerprintLimit < 0 {
		return fmt.Errorf("fingerprint limit %d is negative", st.FingerprintLimit)
	}
	for _, l := range []struct {
		name  string
		tools []string
	}{{"write-confirm bypass tools", st.BypassTools}, {"repeat tools", st.RepeatTools}} {
		if slices.Contains(l.tools, "") {
			return fmt.Errorf("%s: an empty tool name", l.name)
		}
	}
	return nil
}

// settings returns the loop config and the store options of a session of
// the agent.
func (s *Server) settings(agentCode, session string) (loop.Config, state.Options) {
	cfg, st := s.opt.Loop, s.opt.State
	if a, ok := s.opt.AgentSettings[agentCode]; ok {
		cfg, st = a.Loop, a.State
	}
	return cfg, state.Options{SessionID: session, Now: s.opt.Now, BypassTools: slices.Clone(st.BypassTools),
		FingerprintLimit: st.FingerprintLimit, RepeatTools: slices.Clone(st.RepeatTools)}
}

// validateSettings checks the default settings and every agent's.
func (o *Options) validateSettings() error {
	if err := o.State.validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	for _, code := range slices.Sorted(maps.Keys(o.AgentSettings)) {
		a := o.AgentSettings[code]
		if code == "" {
			return fmt.Errorf("%w: agent settings for an empty agent code", ErrConfig)
		}
		if err := a.Loop.Validate(); err != nil {
			return fmt.Errorf("%w: agent %s: %w", ErrConfig, code, err)
		}
		if err := a.State.validate(); err != nil {
			return fmt.Errorf("%w: agent %s: %w", ErrConfig, code, err)
		}
	}
	return nil
}
