package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/testdata"
)

// stamps are the times the host sets itself (a generation's install), which
// the tests cannot fix.
var stamps = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)

// TestClientPlugins installs, swaps, refuses and rolls back generations of
// a slot through the client, with the admin key.
func TestClientPlugins(t *testing.T) {
	t.Parallel()
	f := newClientFixture(t, approvalFile, 0)
	good, goodv2, configured := testdata.Wasm(t, "good"), testdata.Wasm(t, "goodv2"), testdata.Wasm(t, "configured")
	dir := t.TempDir()
	limit, notJSON := filepath.Join(dir, "limit.json"), filepath.Join(dir, "bad.json")
	writeFile(t, limit, "{\n  \"limit\": 5\n}\n")
	writeFile(t, notJSON, "{limit: 5}")
	vars := map[string]string{
		"good": host.Digest(testdata.Bytes(t, "good")), "goodv2": host.Digest(testdata.Bytes(t, "goodv2")),
		"configured": host.Digest(testdata.Bytes(t, "configured")),
		"goodwasm":   good, "goodv2wasm": goodv2, "configuredwasm": configured, "limit": limit, "notjson": notJSON,
	}
	for _, k := range []string{"good", "goodv2", "configured"} {
		vars[k+"12"] = vars[k][:12]
	}
	runSteps(t, f, vars, []clientStep{
		{"no slots", clientAdmin, []string{"slots", "list"}, 0, "no plugin slots\n", ""},
		{"unknown slot", clientAdmin, []string{"slots", "show", "Good"}, 1, "", "warden: slot_not_found: no slot Good\n"},
		{"tenant key", clientAcme, []string{"slots", "install", "Good", "{goodwasm}"}, 1, "", "warden: forbidden: the admin API needs an admin key\n"},
		{"first generation", clientAdmin, []string{"slots", "install", "Good", "{goodwasm}"}, 0,
			"slot Good created: generation 1 serves good@1.0.0 ({good12})\n", ""},
		{"a pin the module does not match", clientAdmin, []string{"slots", "install", "--sha256", "sha256:00", "Good", "{goodv2wasm}"}, 1,
			"", "warden: digest_mismatch: server: slot Good: sha256 {goodv2}, pinned 00: module digest does not match its pin\n"},
		{"swap, pinned", clientAdmin, []string{"slots", "install", "Good", "{goodv2wasm}", "--sha256", "{goodv2}"}, 0,
			"slot Good installed: generation 2 serves good@2.0.0 ({goodv212})\n", ""},
		{"rollback", clientAdmin, []string{"slots", "rollback", "--wait", "1m", "Good"}, 0,
			"slot Good rolled back: generation 3 serves good@1.0.0 ({good12})\n", ""},
		{"a negative wait", clientAdmin, []string{"slots", "rollback", "--wait", "-1s", "Good"}, 2, "",
			"warden slots rollback: --wait -1s is negative\nusage: warden slots rollback [--to N] [--wait D] SLOT (warden slots rollback --help)\n"},
		{"rollback to a generation not kept", clientAdmin, []string{"slots", "rollback", "--to", "9", "Good"}, 1, "",
			"warden: generation_not_found: server: slot Good: generation 9: generation not kept (kept: 1 to 3)\n"},
		{"rollback of an unknown slot", clientAdmin, []string{"slots", "rollback", "Nope"}, 1, "", "warden: slot_not_found: no slot Nope\n"},
		{"a configured plugin", clientAdmin, []string{"slots", "install", "--config", "{limit}", "Limit", "{configuredwasm}"}, 0,
			"slot Limit created: generation 1 serves configured@1.0.0 ({configured12})\n", ""},
		{"a config that is not JSON", clientAdmin, []string{"slots", "install", "--config", "{notjson}", "Limit", "{configuredwasm}"}, 2,
			"", "warden slots install: --config {notjson} is not JSON: invalid character 'l' looking for beginning of object key string\n" +
				"usage: warden slots install [--sha256 HEX] [--config FILE] [--wait D] SLOT FILE.wasm (warden slots install --help)\n"},
		{"no module file", clientAdmin, []string{"slots", "install", "Limit", "{notjson}.wasm"}, 2,
			"", "warden slots install: the module: open {notjson}.wasm: no such file or directory\n" +
				"usage: warden slots install [--sha256 HEX] [--config FILE] [--wait D] SLOT FILE.wasm (warden slots install --help)\n"},
		{"a bad slot name", clientAdmin, []string{"slots", "install", "9lives", "{goodwasm}"}, 1,
			"", "warden: invalid_request: slot name must match ^[A-Za-z][A-Za-z0-9_.-]{0,63}$\n"},
	})
	got := stamps.ReplaceAllString(f.must(clientAdmin, "slots", "list"), "{time}")
	if want := expand("SLOT   GENERATION  PLUGIN            DIGEST        INSTALLED             GENERATIONS\n"+
		"Good   3           good@1.0.0        {good12}  {time}  3\n"+
		"Limit  1           configured@1.0.0  {configured12}  {time}  1\n", vars); got != want {
		t.Errorf("slots list =\n%s\nwant\n%s", got, want)
	}
	// The load check's and self-test's probes, counted apart from calls.
	var kept struct {
		Kept []struct {
			Counts struct{ Probes uint64 } `json:"counts"`
		} `json:"kept"`
	}
	if err := json.Unmarshal([]byte(f.raw(clientAdmin, "/admin/v1/slots/Good")), &kept); err != nil || len(kept.Kept) != 3 {
		t.Fatalf("kept generations: %+v, %v", kept, err)
	}
	for i, k := range kept.Kept {
		if k.Counts.Probes == 0 {
			t.Fatalf("generation %d: no probes counted", i+1)
		}
		vars[fmt.Sprintf("probes%d", i+1)] = fmt.Sprintf("%-6d", k.Counts.Probes)
	}
	got = stamps.ReplaceAllString(f.must(clientAdmin, "slots", "show", "Good"), "{time}")
	want := expand("slot     Good\nserving  generation 3, good@1.0.0\ndigest   {good}\n\n"+
		"GENERATION  PLUGIN      DIGEST        INSTALLED             RETIRED\n"+
		"1           good@1.0.0  {good12}  {time}  {time}\n"+
		"2           good@2.0.0  {goodv212}  {time}  {time}\n"+
		"3           good@1.0.0  {good12}  {time}\n\n"+
		"STORED  PLUGIN      DIGEST        ORIGIN         BY     TIME\n"+
		"1       good@1.0.0  {good12}  admin          local  {time}\n"+
		"2       good@2.0.0  {goodv212}  admin          local  {time}\n"+
		"3       good@1.0.0  {good12}  rollback to 1  local  {time}\n\n"+
		"STORED  CALLS  P50  P99  PROBES  OUTCOMES  INSTANCES\n"+
		"1       0                {probes1}            local\n"+
		"2       0                {probes2}            local\n"+
		"3       0                {probes3}            local\n\n"+
		"INSTANCE  SERVES  DIGEST        SINCE                 READY  REFUSED\n"+
		"local     3       {good12}  {time}\n\n"+
		"rollout  Good@3\nstate    done\n\n"+
		"REFUSED               DIGEST        ORIGIN  REASON\n"+
		"{time}  {goodv212}  admin   server: slot Good: sha256 {goodv2}, pinned 00: module digest does not match its pin\n\n"+
		"COUNTER ", vars)
	if !strings.HasPrefix(got, want) || !strings.Contains(got, "\nplugin                     \"good@1.0.0\"\n") {
		t.Errorf("slots show Good =\n%s\nwant it to start\n%s", got, want)
	}
	for _, c := range []struct{ args, path string }{
		{"slots list", "/admin/v1/slots"},
		{"slots show Good", "/admin/v1/slots/Good"},
	} {
		got := f.must(clientAdmin, append(strings.Fields(c.args), "--json")...)
		if want := strings.TrimSuffix(f.raw(clientAdmin, c.path), "\n") + "\n"; stamps.ReplaceAllString(got, "") != stamps.ReplaceAllString(want, "") {
			t.Errorf("warden %s --json =\n%s\nwant the API's answer\n%s", c.args, got, want)
		}
	}

	// The instances: this one alone, without a shared directory.
	var stdout, stderr bytes.Buffer
	code := cmdClient(context.Background(), "instances", []string{"list", "--server", f.url, "--key", clientAdmin}, &stdout, &stderr)
	if want := "INSTANCE          SESSIONS  LEASE UNTIL\nlocal (this one)  0\n"; code != 0 || stdout.String() != want || stderr.Len() > 0 {
		t.Errorf("instances list = %d\n%q\n%s\nwant\n%q", code, stdout.String(), stderr.String(), want)
	}
	stdout.Reset()
	stderr.Reset()
	code = cmdClient(context.Background(), "instances", []string{"list", "--server", f.url, "--key", clientAcme}, &stdout, &stderr)
	if want := "warden: forbidden: the admin API needs an admin key\n"; code != 1 || stdout.Len() > 0 || stderr.String() != want {
		t.Errorf("instances list with a tenant key = %d %q %q", code, stdout.String(), stderr.String())
	}
}
