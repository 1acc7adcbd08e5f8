package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
)

// StatusActive is the status of loadable agents and skills (§1.1).
const StatusActive = "ACTIVE"

// ID is a row id of the studio tables. It decodes from a JSON number or a
// JSON string, since studios differ.
type ID string

// UnmarshalJSON accepts 12 and "12" alike.
func (id *ID) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*id = ID(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("id: want number or string: %w", err)
	}
	*id = ID(n.String())
	return nil
}

// Flag is an enabled_flag column: 1 enables. It decodes from a number, a
// numeric string or a boolean.
type Flag int

// UnmarshalJSON accepts 1, "1" and true.
func (f *Flag) UnmarshalJSON(b []byte) error {
	switch s := string(bytes.TrimSpace(b)); s {
	case "true":
		*f = 1
		return nil
	case "false", "null":
		*f = 0
		return nil
	default:
		s, _ = strconv.Unquote(s)
		if s == "" {
			s = string(bytes.TrimSpace(b))
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("enabled_flag: want 0 or 1: %w", err)
		}
		*f = Flag(n)
		return nil
	}
}

// AgentProfile is a row of agent_profile.
type AgentProfile struct {
	ID            ID     `json:"id"`
	AgentCode     string `json:"agent_code"`
	AgentName     string `json:"agent_name"`
	IdentityDesc  string `json:"identity_desc"`
	MissionDesc   string `json:"mission_desc"`
	BoundaryDesc  string `json:"boundary_desc"`
	StyleDesc     string `json:"style_desc"`
	PrincipleDesc string `json:"principle_desc"`
	Status        string `json:"status"`
}

// RoutingDesc is the text routing matches against: mission_desc, else identity_desc (§1.2).
func (a AgentProfile) RoutingDesc() string {
	if a.MissionDesc != "" {
		return a.MissionDesc
	}
	return a.IdentityDesc
}

// SkillProfile is a row of skill_profile. SkillContract is the contract's
// text (JSON with comments).
type SkillProfile struct {
	ID            ID     `json:"id"`
	SkillKey      string `json:"skill_key"`
	SkillName     string `json:"skill_name"`
	SemanticDesc  string `json:"semantic_desc"`
	SkillManual   string `json:"skill_manual"`
	SkillContract string `json:"skill_contract"`
	Status        string `json:"status"`
}

// ShortDesc is the skill's catalog line: semantic_desc, else skill_name (§1.2).
func (s SkillProfile) ShortDesc() string {
	if s.SemanticDesc != "" {
		return s.SemanticDesc
	}
	return s.SkillName
}

// AgentSkillBinding is a row of agent_skill_binding.
type AgentSkillBinding struct {
	AgentID     ID   `json:"agent_id"`
	SkillID     ID   `json:"skill_id"`
	EnabledFlag Flag `json:"enabled_flag"`
}

// SkillToolBinding is a row of skill_tool_binding.
type SkillToolBinding struct {
	SkillID     ID     `json:"skill_id"`
	ToolName    string `json:"tool_name"`
	EnabledFlag Flag   `json:"enabled_flag"`
}

// Tables is the slice of the four studio tables that concerns one agent, or
// all of them. Rows need not be pre-filtered: the Loader applies the
// status=ACTIVE and enabled_flag=1 rules itself.
type Tables struct {
	Agents      []AgentProfile
	Skills      []SkillProfile
	AgentSkills []AgentSkillBinding
	SkillTools  []SkillToolBinding
}

// Store reads the skill configuration. DirStore is the embedded default; a
// database- or HTTP-backed agent studio implements the same interface.
type Store interface {
	// AgentTables returns the agent_profile row(s) with the agent_code and
	// the skill rows and bindings reachable from them. An unknown code
	// yields empty Tables, not an error.
	AgentTables(ctx context.Context, agentCode string) (Tables, error)
}

// Filter returns the tables restricted to one agent_code: the agent rows
// with that code and the skills, agent bindings and tool bindings that hang
// off them. Stores that hold everything in memory use it.
func (t Tables) Filter(agentCode string) Tables {
	var out Tables
	agents := map[ID]bool{}
	for _, a := range t.Agents {
		if a.AgentCode == agentCode {
			out.Agents = append(out.Agents, a)
			agents[a.ID] = true
		}
	}
	skills := map[ID]bool{}
	for _, b := range t.AgentSkills {
		if agents[b.AgentID] {
			out.AgentSkills = append(out.AgentSkills, b)
			skills[b.SkillID] = true
		}
	}
	for _, s := range t.Skills {
		if skills[s.ID] {
			out.Skills = append(out.Skills, s)
		}
	}
	for _, b := range t.SkillTools {
		if skills[b.SkillID] {
			out.SkillTools = append(out.SkillTools, b)
		}
	}
	return out
}
