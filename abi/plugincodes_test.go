package abi_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
)

// domainBlocked is the code the tests' domainguard declares.
var domainBlocked = map[string]any{
	"name": "DOMAIN_BLOCKED", "outcome": "REJECTED",
	"reason": map[string]any{"zh": "域名 {domain} 不在允许列表中", "en": "domain {domain} is not on the allow-list"},
	"next":   map[string]any{"zh": "换用允许列表中的域名", "en": "use a domain on the allow-list"},
}

func codeWith(kv ...any) map[string]any {
	c := map[string]any{}
	for k, v := range domainBlocked {
		c[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(c, kv[i].(string))
		} else {
			c[kv[i].(string)] = kv[i+1]
		}
	}
	return c
}

func TestParseManifestCodes(t *testing.T) {
	t.Parallel()
	m, err := abi.ParseManifest(edit(t, validGuard, "codes", []any{domainBlocked}))
	if err != nil {
		t.Fatal(err)
	}
	want := []abi.CodeSpec{{Name: "DOMAIN_BLOCKED", Outcome: abi.OutcomeRejected,
		Reason: abi.Texts{ZH: "域名 {domain} 不在允许列表中", EN: "domain {domain} is not on the allow-list"},
		Next:   abi.Texts{ZH: "换用允许列表中的域名", EN: "use a domain on the allow-list"}}}
	if !reflect.DeepEqual(m.Codes, want) {
		t.Fatalf("Codes = %+v, want %+v", m.Codes, want)
	}
	for _, tt := range []struct {
		code string
		ok   bool
	}{
		{"DOMAIN_BLOCKED", true}, {"arg-policy:DOMAIN_BLOCKED", true},
		{"other:DOMAIN_BLOCKED", false}, {"DOMAIN_OPEN", false}, {"arg-policy:", false}, {"", false},
	} {
		if _, ok := m.Declared(tt.code); ok != tt.ok {
			t.Errorf("Declared(%q) = %v, want %v", tt.code, ok, tt.ok)
		}
	}
}

func TestParseManifestCodesInvalid(t *testing.T) {
	t.Parallel()
	const g = "abi: manifest arg-policy: invalid manifest: "
	many := make([]any, abi.MaxPluginCodes+1)
	for i := range many {
		many[i] = codeWith("name", fmt.Sprintf("C%d", i))
	}
	tests := []struct {
		name  string
		codes any
		msg   string
	}{
		{"shadows a runtime code", []any{codeWith("name", "APPROVAL_REQUIRED")},
			g + `codes[0] name "APPROVAL_REQUIRED" is a runtime code: a plugin's code cannot shadow it`},
		{"shadows a host-reserved code", []any{codeWith("name", "PLUGIN_TRAP")},
			g + `codes[0] name "PLUGIN_TRAP" is a runtime code: a plugin's code cannot shadow it`},
		{"wire form of a runtime code", []any{codeWith("name", "agent_runtime.42221")},
			g + `codes[0] name "agent_runtime.42221" must be 1-48 of [A-Z0-9_], starting with a letter`},
		{"another plugin's namespace", []any{codeWith("name", "other:DOMAIN_BLOCKED")},
			g + `codes[0] name "other:DOMAIN_BLOCKED" must be 1-48 of [A-Z0-9_], starting with a letter`},
		{"lower case", []any{codeWith("name", "domain_blocked")},
			g + `codes[0] name "domain_blocked" must be 1-48 of [A-Z0-9_], starting with a letter`},
		{"too long", []any{codeWith("name", strings.Repeat("A", 49))},
			g + `codes[0] name "` + strings.Repeat("A", 49) + `" must be 1-48 of [A-Z0-9_], starting with a letter`},
		{"success outcome", []any{codeWith("outcome", "SUCCESS")},
			g + `codes[0] outcome SUCCESS must be FAILED, REJECTED or DEFERRED: a code is for a non-success`},
		{"no outcome", []any{codeWith("outcome", nil)},
			g + `codes[0] outcome is required: FAILED, REJECTED or DEFERRED`},
		{"no next step", []any{codeWith("next", map[string]any{"zh": "下一步", "en": " "})},
			g + `codes[0] next.en is required: a non-success needs a reason and a next step`},
		{"no reason", []any{codeWith("reason", nil)},
			g + "codes[0] reason.zh is required: a non-success needs a reason and a next step\n" +
				g + "codes[0] reason.en is required: a non-success needs a reason and a next step"},
		{"template too long", []any{codeWith("reason", map[string]any{"zh": strings.Repeat("长", 400), "en": "r"})},
			g + `codes[0] reason.zh is 1200 bytes, over 1024`},
		{"declared twice", []any{domainBlocked, domainBlocked}, g + `code "DOMAIN_BLOCKED" declared twice`},
		{"too many", many, g + "65 codes, at most 64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := abi.ParseManifest(edit(t, validGuard, "codes", tt.codes))
			if err == nil || err.Error() != tt.msg || !errors.Is(err, abi.ErrInvalidManifest) {
				t.Fatalf("ParseManifest = %v\nwant %s", err, tt.msg)
			}
		})
	}
	for _, in := range []string{
		`{"name":"g","version":"1.0.0","abi":1,"role":"guard","phases":["before"],"codes":[{"name":"A","outcome":"REJECTED","reason":{"zh":"r","en":"r"},"next":{"zh":"n","en":"n","fr":"n"}}]}`,
		`{"name":"g","version":"1.0.0","abi":1,"role":"guard","phases":["before"],"codes":[{"name":"A","Name":"B","outcome":"REJECTED","reason":{"zh":"r","en":"r"},"next":{"zh":"n","en":"n"}}]}`,
		`{"name":"g","version":"1.0.0","abi":1,"role":"guard","phases":["before"],"codes":[{"name":"A","outcome":"MAYBE","reason":{"zh":"r","en":"r"},"next":{"zh":"n","en":"n"}}]}`,
	} {
		if _, err := abi.ParseManifest([]byte(in)); !errors.Is(err, abi.ErrInvalidManifest) {
			t.Errorf("ParseManifest(%s) = %v, want ErrInvalidManifest", in, err)
		}
	}
}

func TestManifestUngranted(t *testing.T) {
	t.Parallel()
	m := abi.Manifest{Capabilities: []abi.Capability{abi.CapEffectNode, abi.CapStateNode, abi.CapClock}}
	tests := []struct {
		grant []abi.Capability
		want  []abi.Capability
	}{
		{nil, []abi.Capability{abi.CapEffectNode, abi.CapStateNode, abi.CapClock}},
		{[]abi.Capability{abi.CapStateNode}, []abi.Capability{abi.CapEffectNode, abi.CapClock}},
		{[]abi.Capability{abi.CapClock, abi.CapStateNode, abi.CapEffectNode, abi.CapRandom}, nil},
	}
	for _, tt := range tests {
		if got := m.Ungranted(tt.grant); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Ungranted(%v) = %v, want %v", tt.grant, got, tt.want)
		}
	}
}

func TestPluginCode(t *testing.T) {
	t.Parallel()
	c := abi.PluginCode("domainguard", "DOMAIN_BLOCKED")
	if c != "domainguard:DOMAIN_BLOCKED" || !c.IsPlugin() || c.Known() {
		t.Fatalf("PluginCode = %q (plugin %v, known %v)", c, c.IsPlugin(), c.Known())
	}
	for _, s := range []abi.Code{"APPROVAL_REQUIRED", "agent_runtime.42221", ":X", "g:", "G:X", "g:x", "g:X:Y", ""} {
		if s.IsPlugin() {
			t.Errorf("%q.IsPlugin() = true", s)
		}
	}
	if _, err := abi.ParseCode(string(c)); !errors.Is(err, abi.ErrUnknownCode) {
		t.Errorf("ParseCode(%q) = %v: a plugin's code is not in the runtime's registry", c, err)
	}
	// Every runtime code is out of reach of the plugin namespace.
	for _, i := range abi.Codes() {
		if i.Code.IsPlugin() || abi.Code(i.Wire).IsPlugin() {
			t.Errorf("runtime code %s (%s) reads as a plugin's", i.Code, i.Wire)
		}
	}
}

func TestRecorderDeclaredCodes(t *testing.T) {
	t.Parallel()
	m := abi.Manifest{Name: "domainguard", Version: "1.0.0", ABI: 1, Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore},
		Codes: []abi.CodeSpec{{Name: "DOMAIN_BLOCKED", Outcome: abi.OutcomeRejected,
			Reason: abi.Texts{ZH: "域名 {domain} 被拒", EN: "domain {domain} refused"}, Next: abi.Texts{ZH: "换一个", EN: "use another"}}}}
	want := abi.Observation{Outcome: abi.OutcomeRejected, Code: "domainguard:DOMAIN_BLOCKED", Text: "domain evil.org refused", Next: "use another"}
	cv := abi.PluginContractViolation
	tests := []struct {
		name      string
		outcome   abi.Outcome
		code      string
		reason    string
		next      string
		violation *abi.Violation
	}{
		{"declared name", abi.OutcomeRejected, "DOMAIN_BLOCKED", "domain evil.org refused", "use another", nil},
		{"namespaced name", abi.OutcomeRejected, "domainguard:DOMAIN_BLOCKED", "domain evil.org refused", "use another", nil},
		{"another plugin's code", abi.OutcomeRejected, "otherguard:DOMAIN_BLOCKED", "r", "n",
			&abi.Violation{Code: cv, Kind: abi.ViolationUnknownCode, Detail: "otherguard:DOMAIN_BLOCKED"}},
		{"undeclared name", abi.OutcomeRejected, "DOMAIN_OPEN", "r", "n",
			&abi.Violation{Code: cv, Kind: abi.ViolationUnknownCode, Detail: "DOMAIN_OPEN"}},
		{"another outcome", abi.OutcomeFailed, "DOMAIN_BLOCKED", "r", "n",
			&abi.Violation{Code: cv, Kind: abi.ViolationCodeOutcome, Detail: "domainguard:DOMAIN_BLOCKED FAILED, declared REJECTED"}},
		{"no next step", abi.OutcomeRejected, "DOMAIN_BLOCKED", "r", " ",
			&abi.Violation{Code: cv, Kind: abi.ViolationMissingNext, Detail: "domainguard:DOMAIN_BLOCKED"}},
		{"no reason", abi.OutcomeRejected, "DOMAIN_BLOCKED", "", "n",
			&abi.Violation{Code: cv, Kind: abi.ViolationMissingReason, Detail: "domainguard:DOMAIN_BLOCKED"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := abi.NewRecorder(&m, 0)
			r.Result(tt.outcome, tt.code, tt.reason, tt.next, nil)
			v, err := r.Finish()
			if tt.violation != nil {
				var got *abi.Violation
				if !errors.As(err, &got) || *got != *tt.violation {
					t.Fatalf("Finish = %v, %v; want violation %+v", v, err, tt.violation)
				}
				return
			}
			if err != nil || v.Observation == nil || !reflect.DeepEqual(*v.Observation, want) {
				t.Fatalf("Finish = %+v, %v; want %+v", v.Observation, err, want)
			}
			b, _ := json.Marshal(v.Observation)
			var back abi.Observation
			if err := json.Unmarshal(b, &back); err != nil || back.Validate() != nil || back.Code != want.Code {
				t.Fatalf("round trip of %s = %+v, %v", b, back, err)
			}
		})
	}
}

func TestGrantedRecorder(t *testing.T) {
	t.Parallel()
	// The manifest asks for effect.ledger and effect.fingerprint; the
	// loader granted only effect.ledger.
	r := abi.NewGrantedRecorder(&guardManifest, []abi.Capability{abi.CapEffectLedger}, 0)
	r.Effect(abi.EffectLedgerReserve, []byte(`{}`))
	r.Pass(nil, nil)
	if _, err := r.Finish(); err != nil {
		t.Fatalf("granted effect: %v", err)
	}
	r.Reset()
	r.Effect(abi.EffectFingerprintRecord, nil)
	r.Pass(nil, nil)
	var viol *abi.Violation
	if _, err := r.Finish(); !errors.As(err, &viol) || viol.Kind != abi.ViolationEffectNotGranted || viol.Detail != abi.EffectFingerprintRecord {
		t.Fatalf("effect asked for but not granted: %v", err)
	}
}
