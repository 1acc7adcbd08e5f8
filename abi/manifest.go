package abi

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Manifest is what a plugin declares about itself. The guest exports it; the
// host decodes it strictly (unknown keys are an error, because safety depends
// on them) and refuses at load anything it cannot honour.
type Manifest struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	ABI         int    `json:"abi"`
	Role        Role   `json:"role"`
	Description string `json:"description,omitempty"`
	// Phases a guard runs in; required for guards, absent for builtins.
	Phases []Phase `json:"phases,omitempty"`
	// Tools a builtin provides; required for builtins, absent for guards.
	Tools []ToolSpec `json:"tools,omitempty"`
	// Capabilities the plugin asks for. Asking grants nothing: whoever
	// loads the plugin grants capabilities (host.Policy.Capabilities), and
	// a plugin that asks for one it is not granted is refused at load.
	Capabilities []Capability `json:"capabilities,omitempty"`
	// Codes are the plugin's own error codes, registered for this plugin
	// only, under its name (see PluginCode).
	Codes []CodeSpec `json:"codes,omitempty"`
	// ConfigSchema is a JSON Schema (object) the plugin's config must match.
	ConfigSchema json.RawMessage `json:"configSchema,omitempty"`
	// Limits the plugin wants; the host caps them by its own policy.
	Limits Limits `json:"limits,omitzero"`
}

// ToolSpec is one tool a builtin plugin provides.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// Limits bound one plugin call. Zero means "no wish": the host default applies.
type Limits struct {
	TimeoutMs      int `json:"timeoutMs,omitempty"`
	MemoryPages    int `json:"memoryPages,omitempty"`
	MaxInputBytes  int `json:"maxInputBytes,omitempty"`
	MaxOutputBytes int `json:"maxOutputBytes,omitempty"`
}

// ParseManifest decodes a manifest strictly (DecodeStrict: no unknown key,
// no key twice, no key in another case, nothing after it) and validates it.
func ParseManifest(b []byte) (Manifest, error) {
	var m Manifest
	// Strict: a key twice or in another case would let one manifest be
	// read two ways (encoding/json keeps the last and ignores case).
	if err := decodeStrict(b, &m); err != nil {
		return Manifest{}, fmt.Errorf("abi: manifest: %w: %w", ErrInvalidManifest, err)
	}
	if err := m.Validate(); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// Validate reports every problem of m, each wrapping ErrInvalidManifest.
func (m Manifest) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("abi: manifest %s: %w: %s", m.Name, ErrInvalidManifest, fmt.Sprintf(format, a...)))
	}
	if !validName(m.Name, 64) {
		bad("name %q must be 1-64 of [a-z0-9_.-], starting with a letter", m.Name)
	}
	if !validSemver(m.Version) {
		bad("version %q is not semantic (MAJOR.MINOR.PATCH)", m.Version)
	}
	if m.ABI != Version {
		bad("abi %d is not supported (host speaks %d)", m.ABI, Version)
	}
	switch m.Role {
	case RoleGuard:
		if len(m.Phases) == 0 {
			bad("a guard must name its phases")
		}
		if len(m.Tools) > 0 {
			bad("a guard provides no tools")
		}
	case RoleBuiltin:
		if len(m.Tools) == 0 {
			bad("a builtin must provide at least one tool")
		}
		if len(m.Phases) > 0 {
			bad("a builtin has no phases")
		}
	default:
		bad("role %q must be %q or %q", m.Role, RoleGuard, RoleBuiltin)
	}
	seenPhase := map[Phase]bool{}
	for _, p := range m.Phases {
		if p != PhaseBefore && p != PhaseAfter {
			bad("phase %q must be %q or %q", p, PhaseBefore, PhaseAfter)
		}
		if seenPhase[p] {
			bad("phase %q listed twice", p)
		}
		seenPhase[p] = true
	}
	seenTool := map[string]bool{}
	for i, t := range m.Tools {
		if !validToolName(t.Name) {
			bad("tools[%d].name %q must be 1-64 of [A-Za-z0-9_-]", i, t.Name)
		}
		if seenTool[t.Name] {
			bad("tool %q listed twice", t.Name)
		}
		seenTool[t.Name] = true
		if !isJSONObjectWithType(t.InputSchema, "object") {
			bad("tools[%d].inputSchema must be a JSON Schema object with \"type\": \"object\"", i)
		}
	}
	seenCap := map[Capability]bool{}
	for _, c := range m.Capabilities {
		if !c.Known() {
			bad("capability %q is unknown", c)
		}
		if seenCap[c] {
			bad("capability %q listed twice", c)
		}
		seenCap[c] = true
	}
	if len(m.Codes) > MaxPluginCodes {
		bad("%d codes, at most %d", len(m.Codes), MaxPluginCodes)
	}
	seenCode := map[string]bool{}
	for i, c := range m.Codes {
		for _, p := range c.problems() {
			bad("codes[%d] %s", i, p)
		}
		if seenCode[c.Name] {
			bad("code %q declared twice", c.Name)
		}
		seenCode[c.Name] = true
	}
	if len(m.ConfigSchema) > 0 && !isJSONObjectWithType(m.ConfigSchema, "") {
		bad("configSchema must be a JSON object")
	}
	l := m.Limits
	if l.TimeoutMs < 0 || l.MemoryPages < 0 || l.MaxInputBytes < 0 || l.MaxOutputBytes < 0 {
		bad("limits must not be negative")
	}
	if l.MemoryPages > 65536 {
		bad("limits.memoryPages %d exceeds the 4 GiB address space", l.MemoryPages)
	}
	return errors.Join(errs...)
}

// Grants reports whether m asks for capability c. Only for an in-process
// plugin, whose manifest is the program's own, is that what it holds; a
// loaded module holds what its loader granted (host.Policy.Capabilities).
func (m Manifest) Grants(c Capability) bool {
	for _, x := range m.Capabilities {
		if x == c {
			return true
		}
	}
	return false
}

// Ungranted returns the capabilities m asks for that grant does not hold,
// in m's order; nil when grant holds them all.
func (m Manifest) Ungranted(grant []Capability) []Capability {
	var out []Capability
	for _, c := range m.Capabilities {
		if !slices.Contains(grant, c) {
			out = append(out, c)
		}
	}
	return out
}

// Declared returns the code m declares under code, which is the declared
// name ("DOMAIN_BLOCKED") or its namespaced form under m's name
// ("domainguard:DOMAIN_BLOCKED"); another plugin's namespace never matches.
func (m Manifest) Declared(code string) (CodeSpec, bool) {
	if plugin, name, ok := Code(code).Plugin(); ok {
		if plugin != m.Name {
			return CodeSpec{}, false
		}
		code = name
	}
	for _, c := range m.Codes {
		if c.Name == code {
			return c, true
		}
	}
	return CodeSpec{}, false
}

// Provides reports whether a builtin manifest provides the named tool.
func (m Manifest) Provides(tool string) bool {
	for _, t := range m.Tools {
		if t.Name == tool {
			return true
		}
	}
	return false
}

// RunsIn reports whether a guard manifest runs in phase p.
func (m Manifest) RunsIn(p Phase) bool {
	for _, x := range m.Phases {
		if x == p {
			return true
		}
	}
	return false
}

func validName(s string, max int) bool {
	if len(s) == 0 || len(s) > max || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

func validToolName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func validSemver(s string) bool {
	core, pre, hasPre := cut(s, '-')
	if hasPre && pre == "" || len(core) == 0 || core[len(core)-1] == '.' {
		return false
	}
	parts := 0
	for len(core) > 0 || parts == 0 {
		var p string
		p, core, _ = cut(core, '.')
		if p == "" || (len(p) > 1 && p[0] == '0') {
			return false
		}
		for i := 0; i < len(p); i++ {
			if p[i] < '0' || p[i] > '9' {
				return false
			}
		}
		parts++
		if parts > 3 {
			return false
		}
	}
	return parts == 3
}

func cut(s string, sep byte) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func isJSONObjectWithType(raw json.RawMessage, want string) bool {
	var v map[string]json.RawMessage
	if json.Unmarshal(raw, &v) != nil || v == nil {
		return false
	}
	if want == "" {
		return true
	}
	var t string
	return json.Unmarshal(v["type"], &t) == nil && t == want
}
