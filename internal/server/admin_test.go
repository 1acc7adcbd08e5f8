package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/server"
	"github.com/agentwarden/warden/internal/testdata"
)

func install(t *testing.T, fixture string, pin string) string {
	t.Helper()
	b, _ := json.Marshal(server.Install{Module: testdata.Bytes(t, fixture), SHA256: pin})
	return string(b)
}

// TestAdminSwap installs, swaps, refuses and rolls back generations of a
// slot, checking after each step which generation serves.
func TestAdminSwap(t *testing.T) {
	f := newFixture(t)
	good := host.Digest(testdata.Bytes(t, "good"))
	goodv2 := host.Digest(testdata.Bytes(t, "goodv2"))
	steps := []struct {
		name, method, path, key, body string
		status                        int
		code                          string
		// serving is the digest and generation number serving afterwards
		// (a refused candidate keeps its number: it is its rollout's id).
		serving string
		number  uint64
	}{
		{"tenant key refused", "PUT", "/admin/v1/slots/Good", keyAcme, install(t, "good", ""), 403, server.CodeForbidden, "", 0},
		{"no key", "PUT", "/admin/v1/slots/Good", "", install(t, "good", ""), 401, server.CodeUnauthorized, "", 0},
		{"unknown slot", "GET", "/admin/v1/slots/Good", keyAdmin, "", 404, server.CodeSlotNotFound, "", 0},
		{"first generation, pinned", "PUT", "/admin/v1/slots/Good", keyAdmin, install(t, "good", "sha256:"+good), 201, "", good, 1},
		{"bad pin", "PUT", "/admin/v1/slots/Good", keyAdmin, install(t, "goodv2", good), 422, server.CodeDigestMismatch, good, 1},
		{"broken candidate", "PUT", "/admin/v1/slots/Good", keyAdmin, install(t, "panicstart", ""), 422, server.CodePluginRejected, good, 1},
		{"incompatible candidate", "PUT", "/admin/v1/slots/Good", keyAdmin, install(t, "noresult", ""), 422, server.CodePluginRejected, good, 1},
		{"not a module", "PUT", "/admin/v1/slots/Good", keyAdmin, `{"module":"AGFzbQ=="}`, 422, server.CodePluginRejected, good, 1},
		{"no module", "PUT", "/admin/v1/slots/Good", keyAdmin, `{}`, 400, server.CodeInvalidRequest, good, 1},
		{"unknown field", "PUT", "/admin/v1/slots/Good", keyAdmin, `{"module":"AA==","force":true}`, 400, server.CodeUnknownField, good, 1},
		{"bad slot name", "PUT", "/admin/v1/slots/9lives", keyAdmin, install(t, "good", ""), 400, server.CodeInvalidRequest, good, 1},
		{"swap to v2", "PUT", "/admin/v1/slots/Good", keyAdmin, install(t, "goodv2", goodv2), 200, "", goodv2, 5},
		{"rollback", "POST", "/admin/v1/slots/Good/rollback", keyAdmin, "", 200, "", good, 6},
		{"rollback unknown slot", "POST", "/admin/v1/slots/Nope/rollback", keyAdmin, "", 404, server.CodeSlotNotFound, good, 6},
		{"tenant cannot roll back", "POST", "/admin/v1/slots/Good/rollback", keyGlobex, "", 403, server.CodeForbidden, good, 6},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			var info server.SlotInfo
			code, eb := f.do(t, st.method, st.path, st.key, st.body, &info)
			if code != st.status || eb.Error.Code != st.code {
				t.Fatalf("got %d %s (%s), want %d %s", code, eb.Error.Code, eb.Error.Message, st.status, st.code)
			}
			if st.serving == "" {
				return
			}
			var cur server.SlotInfo
			if code, eb := f.do(t, "GET", "/admin/v1/slots/Good", keyAdmin, "", &cur); code != http.StatusOK {
				t.Fatalf("get slot: %d %+v", code, eb)
			}
			if n := len(cur.Generations); cur.Current.Digest != st.serving || cur.Current.Number != st.number || cur.Generations[n-1].Number != st.number {
				t.Fatalf("serving %s #%d (generations %+v), want %s #%d", cur.Current.Digest, cur.Current.Number, cur.Generations, st.serving, st.number)
			}
		})
	}
	var list struct {
		Slots []server.SlotInfo `json:"slots"`
	}
	f.do(t, "GET", "/admin/v1/slots", keyAdmin, "", &list)
	if len(list.Slots) != 1 || list.Slots[0].Name != "Good" {
		t.Fatalf("slots = %+v", list.Slots)
	}
	for i, g := range list.Slots[0].Generations[:2] {
		if g.Retired == nil {
			t.Fatalf("generation %d not retired after its replacement", i+1)
		}
	}
}

// TestAdminRollbackWithoutPrevious: a slot with one generation has nothing
// to roll back to.
func TestAdminRollbackWithoutPrevious(t *testing.T) {
	f := newFixture(t)
	if code, eb := f.do(t, "PUT", "/admin/v1/slots/Good", keyAdmin, install(t, "good", ""), nil); code != 201 {
		t.Fatalf("install: %d %+v", code, eb)
	}
	if code, eb := f.do(t, "POST", "/admin/v1/slots/Good/rollback", keyAdmin, "", nil); code != 409 || eb.Error.Code != server.CodeNoPrevious {
		t.Fatalf("rollback: %d %s", code, eb.Error.Code)
	}
}

// TestAdminSelfTest: a module that loads but traps when called is refused
// by the self-test, and no slot is created for it.
func TestAdminSelfTest(t *testing.T) {
	f := newFixture(t)
	code, eb := f.do(t, "PUT", "/admin/v1/slots/Panicky", keyAdmin, install(t, "panichandler", ""), nil)
	if code != 422 || eb.Error.Code != server.CodeSelfTestFailed {
		t.Fatalf("panichandler: %d %s (%s)", code, eb.Error.Code, eb.Error.Message)
	}
	if code, eb := f.do(t, "GET", "/admin/v1/slots/Panicky", keyAdmin, "", nil); code != 404 || eb.Error.Code != server.CodeSlotNotFound {
		t.Fatalf("slot after a refused first generation: %d %s", code, eb.Error.Code)
	}
}

// TestAdminRawModule: a module sent as the body (application/wasm), with
// its pin in ?sha256= and its config in the Warden-Config header.
func TestAdminRawModule(t *testing.T) {
	f := newFixture(t)
	good, goodv2 := testdata.Bytes(t, "good"), testdata.Bytes(t, "goodv2")
	steps := []struct {
		name, query, config string
		module              []byte
		status              int
		code                string
		number              uint64
	}{
		{"first generation, pinned", "?sha256=" + host.Digest(good), "", good, 201, "", 1},
		{"bad pin", "?sha256=" + host.Digest(good), "", goodv2, 422, server.CodeDigestMismatch, 1},
		{"unknown parameter", "?force=1", "", goodv2, 400, server.CodeUnknownField, 1},
		{"config not JSON", "", "{", goodv2, 400, server.CodeBadJSON, 1},
		{"empty body", "", "", nil, 400, server.CodeInvalidRequest, 1},
		{"not a module", "", "", []byte("\x00asm"), 422, server.CodePluginRejected, 1},
		// The refused candidate kept its number, 2.
		{"swap, with a config", "", `{}`, goodv2, 200, "", 3},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			req, _ := http.NewRequest("PUT", f.ts.URL+"/admin/v1/slots/Good"+st.query, bytes.NewReader(st.module))
			req.Header.Set("Authorization", "Bearer "+keyAdmin)
			req.Header.Set("Content-Type", "application/wasm")
			if st.config != "" {
				req.Header.Set("Warden-Config", st.config)
			}
			resp, err := f.ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var eb server.ErrorBody
			_ = json.NewDecoder(resp.Body).Decode(&eb)
			if resp.StatusCode != st.status || eb.Error.Code != st.code {
				t.Fatalf("got %d %s (%s), want %d %s", resp.StatusCode, eb.Error.Code, eb.Error.Message, st.status, st.code)
			}
			var cur server.SlotInfo
			f.do(t, "GET", "/admin/v1/slots/Good", keyAdmin, "", &cur)
			if cur.Current.Number != st.number {
				t.Fatalf("serving #%d, want #%d", cur.Current.Number, st.number)
			}
		})
	}
}

// TestSlotStatsShape: a slot's counters are snake_case with their units in
// the names, and the latency histogram carries its bounds.
func TestSlotStatsShape(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if code, eb := f.do(t, "PUT", "/admin/v1/slots/Good", keyAdmin, install(t, "good", ""), nil); code != http.StatusCreated {
		t.Fatalf("install: %d %+v", code, eb)
	}
	var raw struct {
		Stats map[string]json.RawMessage `json:"stats"`
	}
	if code, eb := f.do(t, "GET", "/admin/v1/slots/Good", keyAdmin, "", &raw); code != http.StatusOK {
		t.Fatalf("get slot: %d %+v", code, eb)
	}
	var keys []string
	for k := range raw.Stats {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"budget_refused", "budget_waits", "calls", "deferred", "digest", "fail_open", "failed", "in_flight", "input_too_large",
		"instance_memory_bytes_max", "instances_closed", "instances_created", "instances_evicted", "instances_idle", "instances_live",
		"instances_memory_bytes", "instances_reclaimed", "latency", "latency_ms_total", "memory_limit_pages", "memory_limits", "output_too_large", "pass", "plugin",
		"probes", "rejected", "shadow_differs", "success", "timeouts", "traps", "unavailable", "violations"}
	if !slices.Equal(keys, want) {
		t.Fatalf("stats keys %v, want %v", keys, want)
	}
	var h server.Histogram
	if err := json.Unmarshal(raw.Stats["latency"], &h); err != nil {
		t.Fatal(err)
	}
	if len(h.BoundsMs) != len(host.LatencyBuckets) || len(h.Counts) != len(h.BoundsMs)+1 || h.BoundsMs[0] != 0.01 || h.BoundsMs[len(h.BoundsMs)-1] != 1000 {
		t.Fatalf("latency histogram %+v", h)
	}
	var calls uint64
	for _, c := range h.Counts {
		calls += c
	}
	var st server.SlotStats
	f.do(t, "GET", "/admin/v1/slots/Good", keyAdmin, "", &struct {
		Stats *server.SlotStats `json:"stats"`
	}{&st})
	// The load check's and self-test's calls are counted apart: the slot
	// has served none.
	if st.Calls != 0 || calls != 0 || st.LatencyMsTotal != 0 || st.Probes == 0 {
		t.Fatalf("calls %d, histogram %d, latency %v ms, probes %d", st.Calls, calls, st.LatencyMsTotal, st.Probes)
	}
}
