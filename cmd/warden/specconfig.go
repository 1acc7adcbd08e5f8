package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/server"
	"github.com/agentwarden/warden/loop"
)

// specKeys are the spec's per-deployment settings (CONTRACT_SPEC §11,
// §13–§15, TOOL_OBSERVATION §6) as serve keys: the defaults of every
// agent, the agents key's overrides of one agent, and how a trusted
// gateway passes the login identity.
type specKeys struct {
	BypassTools      json.RawMessage // write-confirm-bypass-tools
	ReconfirmAfter   time.Duration
	DelegateMaxDepth int
	FingerprintLimit int
	RepeatTools      json.RawMessage
	Locale           string
	NoProgressLimit  int
	MaxRounds        int
	Agents           json.RawMessage
	// Headers are the platform-header-* keys, in the order of
	// contract.OpenPlatformFields; Hidden is platform-hidden.
	Headers []string
	Hidden  json.RawMessage

	// Read from the values above by validate.
	loop          loop.Config
	state         server.StateSettings
	agentSettings map[string]server.AgentSettings
	platform      server.PlatformOptions
}

// The spec keys' names.
const (
	keyBypassTools      = "write-confirm-bypass-tools"
	keyReconfirmAfter   = "reconfirm-after"
	keyDelegateMaxDepth = "delegate-max-depth"
	keyFingerprintLimit = "fingerprint-limit"
	keyRepeatTools      = "repeat-tools"
	keyLocale           = "locale"
	keyNoProgressLimit  = "no-progress-limit"
	keyMaxRounds        = "max-rounds"
	keyAgents           = "agents"
	keyPlatformHidden   = "platform-hidden"
)

// headerKey is the platform-header-* key of an open platform field:
// userId is platform-header-user-id.
func headerKey(field string) string {
	var b strings.Builder
	for _, r := range field {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('-')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return "platform-header-" + b.String()
}

// defaultHeader is the header an open field's identity comes in by
// default: userId in X-Platform-User-Id.
func defaultHeader(field string) string {
	parts := strings.Split(strings.TrimPrefix(headerKey(field), "platform-header-"), "-")
	for i, p := range parts {
		parts[i] = strings.ToUpper(p[:1]) + p[1:]
	}
	return "X-Platform-" + strings.Join(parts, "-")
}

func defaultSpecKeys() specKeys {
	d := loop.DefaultConfig()
	k := specKeys{ReconfirmAfter: d.ReconfirmAfter, DelegateMaxDepth: d.DelegateMaxDepth, FingerprintLimit: 3,
		Locale: "zh-CN", NoProgressLimit: d.NoProgressLimit, MaxRounds: d.MaxRounds}
	for _, f := range contract.OpenPlatformFields {
		k.Headers = append(k.Headers, defaultHeader(f))
	}
	return k
}

// specSettings are the spec keys' settings, in usage order.
func (c *serveConfig) specSettings() []setting {
	k := &c.spec
	if len(k.Headers) < len(contract.OpenPlatformFields) {
		k.Headers = make([]string, len(contract.OpenPlatformFields))
	}
	out := []setting{
		{name: keyBypassTools, list: &k.BypassTools},
		{name: keyReconfirmAfter, dur: &k.ReconfirmAfter},
		{name: keyDelegateMaxDepth, integer: &k.DelegateMaxDepth},
		{name: keyFingerprintLimit, integer: &k.FingerprintLimit},
		{name: keyRepeatTools, list: &k.RepeatTools},
		{name: keyLocale, str: &k.Locale},
		{name: keyNoProgressLimit, integer: &k.NoProgressLimit},
		{name: keyMaxRounds, integer: &k.MaxRounds},
		{name: keyAgents, list: &k.Agents},
	}
	for i, f := range contract.OpenPlatformFields {
		out = append(out, setting{name: headerKey(f), str: &k.Headers[i]})
	}
	return append(out, setting{name: keyPlatformHidden, list: &k.Hidden})
}

// agentKeys is one item of the agents key: an agent_code and the keys
// that differ for its sessions.
type agentKeys struct {
	Agent            string    `json:"agent"`
	BypassTools      *[]string `json:"write-confirm-bypass-tools"`
	ReconfirmAfter   *string   `json:"reconfirm-after"`
	DelegateMaxDepth *int      `json:"delegate-max-depth"`
	FingerprintLimit *int      `json:"fingerprint-limit"`
	RepeatTools      *[]string `json:"repeat-tools"`
	Locale           *string   `json:"locale"`
	NoProgressLimit  *int      `json:"no-progress-limit"`
	MaxRounds        *int      `json:"max-rounds"`
}

// specValues are the settings of one agent (or the defaults) being read.
type specValues struct {
	bypass, repeat                         []string
	reconfirm                              time.Duration
	depth, fingerprint, noProgress, rounds int
	locale                                 string
}

// check validates the values; the error names the key.
func (v specValues) check() (string, error) {
	switch {
	case v.reconfirm <= 0:
		return keyReconfirmAfter, fmt.Errorf("%s is not positive", v.reconfirm)
	case v.depth < 1:
		return keyDelegateMaxDepth, fmt.Errorf("%d is less than 1", v.depth)
	case v.fingerprint < 1:
		return keyFingerprintLimit, fmt.Errorf("%d is less than 1", v.fingerprint)
	case v.noProgress < 1:
		return keyNoProgressLimit, fmt.Errorf("%d is less than 1", v.noProgress)
	case v.rounds < 1:
		return keyMaxRounds, fmt.Errorf("%d is less than 1", v.rounds)
	}
	if _, ok := locales[v.locale]; !ok {
		return keyLocale, fmt.Errorf("%q is not zh, zh-CN or en", v.locale)
	}
	for _, l := range []struct {
		key   string
		tools []string
	}{{keyBypassTools, v.bypass}, {keyRepeatTools, v.repeat}} {
		for i, t := range l.tools {
			if t == "" || slices.Contains(l.tools[:i], t) {
				return l.key, fmt.Errorf("tool %q is empty or listed twice", t)
			}
		}
	}
	return "", nil
}

var locales = map[string]abi.Locale{"zh": abi.LocaleZH, "zh-CN": abi.LocaleZH, "en": abi.LocaleEN}

// settings are the server's settings of the values.
func (v specValues) settings() server.AgentSettings {
	cfg := loop.DefaultConfig()
	cfg.NoProgressLimit, cfg.MaxRounds, cfg.DelegateMaxDepth, cfg.ReconfirmAfter, cfg.Locale =
		v.noProgress, v.rounds, v.depth, v.reconfirm, locales[v.locale]
	return server.AgentSettings{Loop: cfg, State: server.StateSettings{BypassTools: v.bypass, FingerprintLimit: v.fingerprint,
		RepeatTools: v.repeat}}
}

// stringList decodes a list key's JSON as strings.
func stringList(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var out []string
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("not a list of strings")
	}
	return out, nil
}

// validateSpec reads and checks the spec keys; bad reports an error of a
// key as validate does.
func (c *serveConfig) validateSpec(bad badValue) error {
	k := &c.spec
	def := specValues{reconfirm: k.ReconfirmAfter, depth: k.DelegateMaxDepth, fingerprint: k.FingerprintLimit,
		noProgress: k.NoProgressLimit, rounds: k.MaxRounds, locale: k.Locale}
	var err error
	if def.bypass, err = stringList(k.BypassTools); err != nil {
		return bad(keyBypassTools, "%v", err)
	}
	if def.repeat, err = stringList(k.RepeatTools); err != nil {
		return bad(keyRepeatTools, "%v", err)
	}
	if key, err := def.check(); err != nil {
		return bad(key, "%v", err)
	}
	s := def.settings()
	k.loop, k.state = s.Loop, s.State
	if err := c.validateAgents(def, bad); err != nil {
		return err
	}
	return c.validatePlatform(bad)
}

// validateAgents reads --agents: each agent's settings are def with the
// keys its item gives.
func (c *serveConfig) validateAgents(def specValues, bad badValue) error {
	k := &c.spec
	k.agentSettings = map[string]server.AgentSettings{}
	var items []json.RawMessage
	if len(k.Agents) > 0 {
		_ = json.Unmarshal(k.Agents, &items) // assign checked it is a list
	}
	for i, raw := range items {
		var a agentKeys
		if err := abi.DecodeStrict(raw, &a); err != nil {
			return bad(keyAgents, "agents[%d]: %s", i, strings.TrimPrefix(err.Error(), "abi: strict json: "))
		}
		if a.Agent == "" {
			return bad(keyAgents, "agents[%d]: agent (the agent_code) is required", i)
		}
		if _, dup := k.agentSettings[a.Agent]; dup {
			return bad(keyAgents, "agents[%d]: agent %q is listed twice", i, a.Agent)
		}
		if !slices.ContainsFunc(c.keys.Tenants, func(t tenantKeys) bool { return t.Agent == a.Agent }) {
			return bad(keyAgents, "agents[%d]: agent %q is no tenant's agent in --keys: its settings would never be used", i, a.Agent)
		}
		v := def
		if a.BypassTools != nil {
			v.bypass = *a.BypassTools
		}
		if a.RepeatTools != nil {
			v.repeat = *a.RepeatTools
		}
		if a.ReconfirmAfter != nil {
			d, err := time.ParseDuration(*a.ReconfirmAfter)
			if err != nil {
				return bad(keyAgents, "agents[%d] (%s): %s: %q is not a duration", i, a.Agent, keyReconfirmAfter, *a.ReconfirmAfter)
			}
			v.reconfirm = d
		}
		for _, p := range []struct {
			from *int
			to   *int
		}{{a.DelegateMaxDepth, &v.depth}, {a.FingerprintLimit, &v.fingerprint}, {a.NoProgressLimit, &v.noProgress}, {a.MaxRounds, &v.rounds}} {
			if p.from != nil {
				*p.to = *p.from
			}
		}
		if a.Locale != nil {
			v.locale = *a.Locale
		}
		if key, err := v.check(); err != nil {
			return bad(keyAgents, "agents[%d] (%s): %s: %v", i, a.Agent, key, err)
		}
		k.agentSettings[a.Agent] = v.settings()
	}
	return nil
}

// validatePlatform reads the login identity's keys: the hidden fields and
// the header of each open one.
func (c *serveConfig) validatePlatform(bad badValue) error {
	k := &c.spec
	hidden, err := stringList(k.Hidden)
	if err != nil {
		return bad(keyPlatformHidden, "%v", err)
	}
	if c.origins[keyPlatformHidden] == fromDefault {
		hidden = slices.Clone(contract.HiddenPlatformFields)
	}
	for _, f := range hidden {
		if !contract.IsPlatformField(f) && !slices.Contains(contract.HiddenPlatformFields, f) {
			return bad(keyPlatformHidden, "%q is not a field of the login identity (open: %s; hidden by the spec: %s)", f,
				strings.Join(contract.OpenPlatformFields, ", "), strings.Join(contract.HiddenPlatformFields, ", "))
		}
	}
	for _, f := range contract.HiddenPlatformFields {
		if !slices.Contains(hidden, f) {
			return bad(keyPlatformHidden, "%s must stay hidden (CONTRACT_SPEC §11): the list may add open fields, not drop these: %s",
				f, strings.Join(contract.HiddenPlatformFields, ", "))
		}
	}
	k.platform = server.PlatformOptions{Headers: map[string]string{}, Hidden: hidden}
	seen := map[string]string{}
	for i, f := range contract.OpenPlatformFields {
		key, h := headerKey(f), k.Headers[i]
		if slices.Contains(hidden, f) {
			if c.origins[key] != fromDefault {
				return bad(key, "platform.%s is in platform-hidden: no header may carry it", f)
			}
			continue
		}
		if h == "" {
			continue
		}
		if !headerToken(h) || strings.EqualFold(h, "Authorization") {
			return bad(key, "%q is not a header name a gateway may set", h)
		}
		if o, ok := seen[strings.ToLower(h)]; ok {
			return bad(key, "%q is %s's header too", h, o)
		}
		seen[strings.ToLower(h)] = key
		k.platform.Headers[f] = h
	}
	for _, t := range c.keys.Tenants {
		k.platform.GatewayKeys = append(k.platform.GatewayKeys, t.GatewayKeys...)
	}
	return nil
}

// headerToken reports whether h is an HTTP header name.
func headerToken(h string) bool {
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+.^_`|~-", r)) {
			return false
		}
	}
	return h != ""
}
