package abi

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// A plugin may declare error codes of its own in its manifest (Manifest.Codes).
// They are registered for that plugin only: a result with one is taken from
// the plugin that declared it and from no other. Its full name is namespaced
// by the plugin's name, "<plugin>:<NAME>" (PluginCode): a runtime code's name
// ("APPROVAL_REQUIRED") and wire form ("agent_runtime.42221") never hold a
// colon, so a plugin's code can neither collide with one nor pass for one,
// and a declared name that is a runtime code's name is refused with the
// manifest.

// PluginCodeSep separates a plugin's name from the name of a code it declared.
const PluginCodeSep = ":"

// MaxPluginCodes bounds how many codes one manifest declares.
const MaxPluginCodes = 64

// MaxCodeTemplate bounds one reason or next-step template, in bytes.
const MaxCodeTemplate = 1024

// CodeSpec is an error code a plugin declares for itself.
type CodeSpec struct {
	// Name is 1-48 of [A-Z0-9_], starting with a letter, and not the name
	// of a runtime code.
	Name string `json:"name"`
	// Outcome is the class of every result with the code: FAILED,
	// REJECTED or DEFERRED.
	Outcome Outcome `json:"outcome"`
	// Reason says what happened (TOOL_OBSERVATION §7.2), Next what the
	// model should do now; both are required in both locales
	// (TOOL_OBSERVATION §7.1). Placeholders are written {name}.
	Reason Texts `json:"reason"`
	Next   Texts `json:"next"`
}

// Texts is one template in each locale.
type Texts struct {
	ZH string `json:"zh"`
	EN string `json:"en"`
}

// In returns the template of the locale with {name} placeholders filled
// from kv pairs.
func (t Texts) In(l Locale, kv ...string) string {
	if l == LocaleEN {
		return Fill(t.EN, kv...)
	}
	return Fill(t.ZH, kv...)
}

// problems lists what is wrong with c, each "what: why".
func (c CodeSpec) problems() []string {
	var out []string
	if !validCodeName(c.Name) {
		out = append(out, fmt.Sprintf("name %q must be 1-48 of [A-Z0-9_], starting with a letter", c.Name))
	} else if _, ok := byCode[Code(c.Name)]; ok {
		out = append(out, fmt.Sprintf("name %q is a runtime code: a plugin's code cannot shadow it", c.Name))
	}
	switch {
	case !c.Outcome.Valid():
		out = append(out, "outcome is required: FAILED, REJECTED or DEFERRED")
	case c.Outcome == OutcomeSuccess:
		out = append(out, "outcome SUCCESS must be FAILED, REJECTED or DEFERRED: a code is for a non-success")
	}
	for _, t := range []struct {
		what string
		text string
	}{{"reason.zh", c.Reason.ZH}, {"reason.en", c.Reason.EN}, {"next.zh", c.Next.ZH}, {"next.en", c.Next.EN}} {
		switch {
		case strings.TrimSpace(t.text) == "":
			out = append(out, t.what+" is required: a non-success needs a reason and a next step")
		case len(t.text) > MaxCodeTemplate:
			out = append(out, fmt.Sprintf("%s is %d bytes, over %d", t.what, len(t.text), MaxCodeTemplate))
		case !utf8.ValidString(t.text):
			out = append(out, t.what+" is not UTF-8")
		}
	}
	return out
}

func validCodeName(s string) bool {
	if len(s) == 0 || len(s) > 48 || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// PluginCode is the full name of the code name declared by plugin:
// "<plugin>:<name>".
func PluginCode(plugin, name string) Code { return Code(plugin + PluginCodeSep + name) }

// Plugin splits a plugin's code into the plugin's name and the declared
// name; ok is false for a runtime code or anything not of that form.
func (c Code) Plugin() (plugin, name string, ok bool) {
	plugin, name, ok = strings.Cut(string(c), PluginCodeSep)
	if !ok || !validName(plugin, 64) || !validCodeName(name) {
		return "", "", false
	}
	return plugin, name, true
}

// IsPlugin reports whether c has the form of a plugin's code. Whether the
// plugin that reported it declared it is the Recorder's to check.
func (c Code) IsPlugin() bool { _, _, ok := c.Plugin(); return ok }
