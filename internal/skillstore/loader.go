package skillstore

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/agentwarden/warden/contract"
)

// Agent is what one turn needs of an agent: its profile, its loadable
// skills, and the skills dropped at load with the reason.
type Agent struct {
	Profile contract.AgentProfile
	Skills  []*Skill
	Dropped []DroppedSkill
}

// Skill returns a loaded skill by skill_key, or nil.
func (a *Agent) Skill(key string) *Skill {
	for _, s := range a.Skills {
		if s.Profile.SkillKey == key {
			return s
		}
	}
	return nil
}

// Skill is a loaded skill. Contract is shared between turns and agents
// through the parse cache: treat it as read-only.
type Skill struct {
	Profile   contract.SkillProfile
	Contract  *contract.Contract
	ToolNames []string // enabled skill_tool_binding rows, in table order, deduplicated
	Warnings  []contract.Warning
}

// DroppedSkill is a skill that failed load validation.
type DroppedSkill struct {
	Profile  contract.SkillProfile
	Err      error // a *ValidationError; Problems(Err) lists each rule
	Warnings []contract.Warning
}

// Loader turns store rows into loaded skills, once per turn. Contracts are
// parsed once per (skill_key, contract text) SHA-256 and cached, so loading
// every turn costs a store read and a hash per skill.
type Loader struct {
	store contract.Store
	log   *slog.Logger

	mu    sync.Mutex
	cache map[[32]byte]*parsed
}

type parsed struct {
	contract *contract.Contract
	warnings []contract.Warning
	err      error
}

// cacheLimit bounds the parse cache; when full it starts over.
const cacheLimit = 4096

// NewLoader returns a loader over a store; log receives one error record per
// dropped skill (nil means slog.Default()).
func NewLoader(store contract.Store, log *slog.Logger) *Loader {
	if log == nil {
		log = slog.Default()
	}
	return &Loader{store: store, log: log, cache: map[[32]byte]*parsed{}}
}

// Parse is Parse through the loader's cache.
func (l *Loader) Parse(skillKey string, src []byte) (*contract.Contract, []contract.Warning, error) {
	h := sha256.New()
	h.Write([]byte(skillKey))
	h.Write([]byte{0})
	h.Write(src)
	var key [32]byte
	h.Sum(key[:0])
	l.mu.Lock()
	p, ok := l.cache[key]
	l.mu.Unlock()
	if ok {
		return p.contract, p.warnings, p.err
	}
	c, w, err := contract.Parse(skillKey, src)
	l.mu.Lock()
	if len(l.cache) >= cacheLimit {
		clear(l.cache)
	}
	l.cache[key] = &parsed{contract: c, warnings: w, err: err}
	l.mu.Unlock()
	return c, w, err
}

// Load reads an agent's rows and loads its skills: only ACTIVE skills bound
// with enabled_flag=1, with the tools bound with enabled_flag=1. A skill that
// fails validation is dropped and logged; the others load. When no skill is
// left, Load returns the agent (with its dropped skills) and an error
// wrapping ErrNoSkills: planning cannot proceed.
func (l *Loader) Load(ctx context.Context, agentCode string) (*Agent, error) {
	t, err := l.store.AgentTables(ctx, agentCode)
	if err != nil {
		return nil, fmt.Errorf("contract: load agent %q: %w", agentCode, err)
	}
	var prof *contract.AgentProfile
	for i := range t.Agents {
		if t.Agents[i].AgentCode == agentCode && t.Agents[i].Status == contract.StatusActive {
			prof = &t.Agents[i]
			break
		}
	}
	if prof == nil {
		return nil, fmt.Errorf("contract: load agent %q: %w", agentCode, contract.ErrAgentNotFound)
	}
	a := &Agent{Profile: *prof}
	for _, sp := range boundSkills(t, prof.ID) {
		c, warns, err := l.Parse(sp.SkillKey, []byte(sp.SkillContract))
		if err != nil {
			l.log.LogAttrs(ctx, slog.LevelError, "skill dropped",
				slog.String("agent", agentCode), slog.String("skill", sp.SkillKey), slog.Any("error", err))
			a.Dropped = append(a.Dropped, DroppedSkill{Profile: sp, Err: err, Warnings: warns})
			continue
		}
		for _, w := range warns {
			l.log.LogAttrs(ctx, slog.LevelWarn, "skill contract warning",
				slog.String("agent", agentCode), slog.String("skill", sp.SkillKey),
				slog.String("rule", string(w.Rule)), slog.String("path", w.Path), slog.String("message", w.Message))
		}
		a.Skills = append(a.Skills, &Skill{Profile: sp, Contract: c, ToolNames: toolNames(t, sp.ID), Warnings: warns})
	}
	if len(a.Skills) == 0 {
		return a, fmt.Errorf("contract: load agent %q: %w", agentCode, contract.ErrNoSkills)
	}
	return a, nil
}

// boundSkills are the agent's ACTIVE skills with an enabled binding, in
// binding order; a skill_key seen twice keeps its first row.
func boundSkills(t contract.Tables, agentID contract.ID) []contract.SkillProfile {
	byID := map[contract.ID]contract.SkillProfile{}
	for _, s := range t.Skills {
		if s.Status == contract.StatusActive {
			if _, dup := byID[s.ID]; !dup {
				byID[s.ID] = s
			}
		}
	}
	var out []contract.SkillProfile
	seen := map[string]bool{}
	for _, b := range t.AgentSkills {
		if b.AgentID != agentID || b.EnabledFlag != 1 {
			continue
		}
		s, ok := byID[b.SkillID]
		if !ok || seen[s.SkillKey] {
			continue
		}
		seen[s.SkillKey] = true
		out = append(out, s)
	}
	return out
}

func toolNames(t contract.Tables, skillID contract.ID) []string {
	var out []string
	for _, b := range t.SkillTools {
		if b.SkillID == skillID && b.EnabledFlag == 1 && b.ToolName != "" && !slices.Contains(out, b.ToolName) {
			out = append(out, b.ToolName)
		}
	}
	return out
}
