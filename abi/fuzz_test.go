package abi_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/agentwarden/warden/abi"
)

// normalizeManifest maps a manifest to the form json.Marshal gives back:
// empty lists become nil and raw JSON is re-encoded (compacted, HTML-escaped).
func normalizeManifest(t testing.TB, m abi.Manifest) abi.Manifest {
	t.Helper()
	raw := func(r json.RawMessage) json.RawMessage {
		if len(r) == 0 {
			return nil
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("re-encode %q: %v", r, err)
		}
		return b
	}
	if len(m.Phases) == 0 {
		m.Phases = nil
	}
	if len(m.Capabilities) == 0 {
		m.Capabilities = nil
	}
	if len(m.Codes) == 0 {
		m.Codes = nil
	}
	if len(m.Tools) == 0 {
		m.Tools = nil
	} else {
		tools := make([]abi.ToolSpec, len(m.Tools))
		for i, tool := range m.Tools {
			tool.InputSchema = raw(tool.InputSchema)
			tools[i] = tool
		}
		m.Tools = tools
	}
	m.ConfigSchema = raw(m.ConfigSchema)
	return m
}

func checkManifestRoundTrip(t testing.TB, in []byte) {
	t.Helper()
	m1, err := abi.ParseManifest(in)
	if err != nil {
		if !errors.Is(err, abi.ErrInvalidManifest) {
			t.Fatalf("ParseManifest error %v does not wrap ErrInvalidManifest", err)
		}
		return
	}
	if err := m1.Validate(); err != nil {
		t.Fatalf("accepted manifest does not validate: %v", err)
	}
	b, err := json.Marshal(m1)
	if err != nil {
		t.Fatalf("Marshal accepted manifest: %v", err)
	}
	m2, err := abi.ParseManifest(b)
	if err != nil {
		t.Fatalf("re-parse of %s: %v\n(input %q)", b, err, in)
	}
	if want := normalizeManifest(t, m1); !reflect.DeepEqual(m2, want) {
		t.Fatalf("round trip changed the manifest:\n got %+v\nwant %+v\n(input %q)", m2, want, in)
	}
	b2, err := json.Marshal(m2)
	if err != nil || !bytes.Equal(b, b2) {
		t.Fatalf("second marshal = %s, %v; want %s", b2, err, b)
	}
}

var manifestSeeds = []string{
	validGuard,
	validBuiltin,
	`{"name":"g","version":"0.0.0","abi":1,"role":"guard","phases":["after"]}`,
	`{"name":"g","version":"1.0.0-alpha","abi":1,"role":"guard","phases":["before"],"limits":{"memoryPages":65536},"configSchema":{"a":"<&>"}}`,
	`{"name":"b","version":"1.0.0","abi":1,"role":"builtin","phases":[],"capabilities":[],"tools":[{"name":"t","description":"\u00e9\ud800","inputSchema":{ "type" : "object" }}]}`,
	`{"name":"g","version":"1.2","abi":1,"role":"guard","phases":["before"]}`,
	`{"name":"g","version":"01.2.3","abi":1,"role":"guard","phases":["before"]}`,
	`{"name":"g","version":"1.2.3","abi":2,"role":"guard","phases":["before"]}`,
	`{"name":"g","version":"1.2.3","abi":1,"role":"guard","phases":["before","before"]}`,
	`{"name":"g","version":"1.2.3","abi":1,"role":"guard","phases":["before"],"capabilities":["network"]}`,
	`{"name":"g","version":"1.2.3","abi":1,"role":"guard","phases":["before"],"limits":{"timeoutMs":-1}}`,
	`{"name":"g","version":"1.2.3","abi":1,"role":"guard","phases":["before"],"extra":1}`,
	`{"name":"g","version":"1.2.3","abi":1,"role":"guard","phases":["before"]}}`,
	`{"NAME":"g","Version":"1.2.3","ABI":1,"role":"guard","phases":["before"]}`,
	`{"name":"g","version":"1.2.3","abi":1,"role":"guard","phases":["before"],"capabilities":[],"Capabilities":["effect.ledger"]}`,
	`{"name":"g","version":"1.2.3","abi":1,"role":"guard","phases":["before"],"capabilities":[],"capabilities":["clock"]}`,
	`{"name":"g","version":"1.2.3","abi":1,"role":"guard","phases":["before"],"configSchema":{"type":"object","type":"string"}}`,
	`{"name":"g","version":"1.2.3","abi":1,"role":"guard","phases":["before"],"codes":[{"name":"DOMAIN_BLOCKED","outcome":"REJECTED","reason":{"zh":"域名 {domain} 被拒","en":"domain {domain} refused"},"next":{"zh":"换一个","en":"use another"}}]}`,
	`{"name":"g","version":"1.2.3","abi":1,"role":"guard","phases":["before"],"codes":[{"name":"APPROVAL_REQUIRED","outcome":"DEFERRED","reason":{"zh":"r","en":"r"},"next":{"zh":"n","en":"n"}}]}`,
	`{"name":"g","version":"1.2.3","abi":1,"role":"guard","phases":["before"],"codes":[{"name":"A","outcome":"SUCCESS","reason":{"zh":"r","en":"r"},"next":{"zh":"","en":"n"}}]}`,
	`{"name":"g","version":"1.2.3","abi":1,"role":"guard","phases":["before"],"codes":[{"name":"A","outcome":"FAILED","reason":{"zh":"r","en":"r"},"next":{"zh":"n","en":"n"}},{"name":"A","outcome":"FAILED","reason":{"zh":"r","en":"r"},"next":{"zh":"n","en":"n"}}]}`,
	`{"name":"g","version":"1.2.3","abi":1,"role":"guard","phases":["before"],"codes":[{"name":"x:A","outcome":4,"reason":{"ZH":"r","en":"r"},"next":null}]}`,
	`{"name":"g","version":"1.2.3","abi":1,"role":"guard","phases":["before"],"codes":{}}`,
	`null`,
	`[]`,
	``,
}

func FuzzParseManifest(f *testing.F) {
	for _, s := range manifestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkManifestRoundTrip(t, in)
	})
}

func FuzzObservationJSON(f *testing.F) {
	for _, o := range []abi.Observation{
		abi.Rejected(abi.ArgRejected, specReason, specNext),
		abi.Failed(abi.ToolTimeout, "tool t did not answer", "retry", json.RawMessage(`{"ms":3000}`)),
		abi.Deferred(abi.ApprovalRequired, "该写操作须经用户确认", "调用 builtin_node_approval"),
		abi.Success("ok", json.RawMessage(`[1,2,3]`)),
	} {
		b, err := json.Marshal(o)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		`{}`, `null`, `{"outcome":"MAYBE"}`, `{"outcome":0}`, `{"outcome":"FAILED","code":"NOPE","data":null}`,
		`{"outcome":"SUCCESS","text":"\ud800","data":{"a":"<>"},"locale":"en"}`, `[`, `"SUCCESS"`,
		`{"outcome":"REJECTED","code":"domainguard:DOMAIN_BLOCKED","text":"域名 evil.org 不在允许的范围内","next":"换用 example.com 下的域名"}`,
		`{"outcome":"FAILED","code":"agent_runtime:DOMAIN_BLOCKED","text":"r","next":"n"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var o abi.Observation
		if err := json.Unmarshal(in, &o); err != nil {
			return
		}
		_ = o.Message()
		_ = o.Validate()
		_ = o.WithNext("next")
		b, err := json.Marshal(o)
		if !o.Outcome.Valid() {
			if !errors.Is(err, abi.ErrUnknownOutcome) {
				t.Fatalf("Marshal with outcome %v = %s, %v; want ErrUnknownOutcome", o.Outcome, b, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Marshal(%+v): %v", o, err)
		}
		var back abi.Observation
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("Unmarshal(%s): %v", b, err)
		}
		b2, err := json.Marshal(back)
		if err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("second marshal = %s, %v; want %s", b2, err, b)
		}
		if back.Outcome != o.Outcome || back.Code != o.Code || back.Text != o.Text || back.Next != o.Next || back.Locale != o.Locale {
			t.Fatalf("round trip = %+v, want %+v", back, o)
		}
	})
}
