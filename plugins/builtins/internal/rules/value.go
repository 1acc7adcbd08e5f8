package rules

import (
	"bytes"
	"slices"
	"strings"
	"unicode"

	"github.com/agentwarden/warden/abi/guest/canonical"
	"github.com/agentwarden/warden/contract"
	"github.com/tidwall/gjson"
)

// Normalize lowercases s and drops white space, punctuation and symbols,
// for the spec's "normalised, blanks removed, lower case" comparisons
// (§5.3).
func Normalize(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsPunct(r) || unicode.IsSymbol(r) {
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// SameValue compares two JSON values: equal canonical forms, or two scalars
// with the same text (200 equals "200", as §6.1 compares).
func SameValue(a, b gjson.Result) bool {
	if !a.Exists() || !b.Exists() {
		return false
	}
	if a.IsObject() || a.IsArray() || b.IsObject() || b.IsArray() {
		return bytes.Equal(canonical.JSON(a), canonical.JSON(b))
	}
	if a.Type == gjson.Null || b.Type == gjson.Null {
		return a.Type == b.Type
	}
	// Two scalars: equal canonical forms have equal texts, and the texts
	// decide.
	return a.String() == b.String()
}

// EmptyValue is a value finish treats as not written: null, a blank string,
// an empty array or object.
func EmptyValue(v gjson.Result) bool {
	switch {
	case !v.Exists() || v.Type == gjson.Null:
		return true
	case v.Type == gjson.String:
		return strings.TrimSpace(v.Str) == ""
	case v.IsArray() || v.IsObject():
		empty := true
		v.ForEach(func(_, _ gjson.Result) bool { empty = false; return false })
		return empty
	}
	return false
}

// AllSources are the source types of §18 in the spec's order.
var AllSources = []contract.SourceType{
	contract.SourceUser, contract.SourceEvidence, contract.SourceNodeOutput, contract.SourceShared,
	contract.SourceSession, contract.SourcePriorTask, contract.SourceModel, contract.SourceContract, contract.SourcePlatform,
}

// AllowedSources is what an output accepts: its sources, or every source
// when none are configured; never MODEL (§8).
func AllowedSources(o *contract.Output) []string {
	from := AllSources
	if o != nil && len(o.Sources) > 0 {
		from = o.Sources
	}
	out := make([]string, 0, len(from))
	for _, s := range from {
		if s != contract.SourceModel && !slices.Contains(out, string(s)) {
			out = append(out, string(s))
		}
	}
	return out
}
