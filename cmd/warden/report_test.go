package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/feedback"
	"github.com/agentwarden/warden/internal/store/sqlstore"
)

const feedbackLines = `{"time":"2026-01-02T03:04:05Z","session":"s1","task":"t1","node":"n1","step":2,"tool":"put","outcome":"FAILED","code":"agent_runtime.40016","name":"TOOL_TIMEOUT","category":"execution","recoverable":true,"next":"retry","status":"RUNNING","stalls":1,"stalls_added":1,"result":"retrying","weight":1}
{"time":"2026-01-02T03:04:06Z","session":"s1","task":"t1","node":"n1","step":3,"tool":"put","outcome":"REJECTED","code":"agent_runtime.40014","name":"MCP_INVALID_PARAMS","category":"argument","recoverable":true,"next":"change","status":"RUNNING","stalls":2,"stalls_added":1,"result":"retrying","weight":1}
{"time":"2026-01-02T03:04:07Z","session":"s1","task":"t1","node":"n1","step":4,"tool":"put","outcome":"SUCCESS","status":"RUNNING","stalls":0,"stalls_added":0,"result":"success","weight":1.5}

{"time":"2026-01-02T03:04:08Z","session":"s1","task":"t1","node":"n2","step":5,"tool":"get","outcome":"SUCCESS","status":"RUNNING","stalls":0,"stalls_added":0,"result":"success","weight":1.5}
`

const moreLines = `{"time":"2026-01-02T03:05:00Z","session":"s2","task":"t2","node":"n3","step":1,"tool":"get","outcome":"FAILED","code":"agent_runtime.40016","name":"TOOL_TIMEOUT","category":"execution","recoverable":true,"next":"stop","status":"FAILED","stalls":3,"stalls_added":1,"result":"failed","weight":0}
`

func writeFeedbackFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReportTools(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := writeFeedbackFile(t, dir, "a.jsonl", feedbackLines)
	b := writeFeedbackFile(t, dir, "b.jsonl", moreLines)
	bad := writeFeedbackFile(t, dir, "bad.jsonl", feedbackLines+"{not json\n")
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string // substring
	}{
		{"table", []string{"tools", a, b}, 0, `5 records

TOOL  CALLS  OK  FAILED  DEFERRED  STALLS  WEIGHT  FAILURES BY CODE
put   3      1   2       0         2       3.5     MCP_INVALID_PARAMS:1 TOOL_TIMEOUT:1
get   2      1   1       0         1       1.5     TOOL_TIMEOUT:1

CATEGORY   CALLS  OK  FAILED  DEFERRED  STALLS  WEIGHT  FAILURES BY CODE
execution  2      0   2       0         2       1.0     TOOL_TIMEOUT:2
argument   1      0   1       0         1       1.0     MCP_INVALID_PARAMS:1
`, ""},
		{"json flag after file", []string{"tools", b, "--json"}, 0, `{
  "records": 1,
  "tools": [
    {
      "name": "get",
      "calls": 1,
      "successes": 0,
      "failures": 1,
      "deferred": 0,
      "by_code": [
        {
          "code": "agent_runtime.40016",
          "name": "TOOL_TIMEOUT",
          "count": 1
        }
      ],
      "stalls": 1,
      "weight": 0
    }
  ],
  "categories": [
    {
      "name": "execution",
      "calls": 1,
      "successes": 0,
      "failures": 1,
      "deferred": 0,
      "by_code": [
        {
          "code": "agent_runtime.40016",
          "name": "TOOL_TIMEOUT",
          "count": 1
        }
      ],
      "stalls": 1,
      "weight": 0
    }
  ]
}
`, ""},
		{"no args", nil, 2, "", "usage: warden report tools"},
		{"unknown report", []string{"plugins"}, 2, "", `unknown report "plugins"`},
		{"no files", []string{"tools", "--json"}, 2, "", "no feedback file given"},
		{"bad flag", []string{"tools", "--csv", a}, 2, "", "unknown flag --csv"},
		{"missing file", []string{"tools", filepath.Join(dir, "nope.jsonl")}, 2, "", "nope.jsonl: open"},
		{"bad line", []string{"tools", a, bad}, 2, "", "bad.jsonl: feedback: line 6: not a feedback record"},
		{"help", []string{"--help"}, 0, reportUsage, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), append([]string{"report"}, tt.args...), &out, &errb)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr=%s", code, tt.code, errb.String())
			}
			if out.String() != tt.stdout {
				t.Errorf("stdout:\n%s\nwant:\n%s", out.String(), tt.stdout)
			}
			if tt.stderr == "" && errb.Len() > 0 || !strings.Contains(errb.String(), tt.stderr) {
				t.Errorf("stderr = %q, want %q", errb.String(), tt.stderr)
			}
		})
	}
}

// pgTestURL names the PostgreSQL database the --store postgres tests use
// (as in store/sqlstore); they are skipped without it.
const pgTestURL = "WARDEN_TEST_POSTGRES_URL"

// reportPostgresDSN creates a schema of its own for the test, dropped at its
// end, and returns a URL whose search_path selects it.
func reportPostgresDSN(t *testing.T) string {
	t.Helper()
	base := os.Getenv(pgTestURL)
	if base == "" {
		t.Skip(pgTestURL + " is not set: skipping warden report tools --store postgres:URL")
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	b := make([]byte, 6)
	rand.Read(b)
	schema := "warden_report_" + hex.EncodeToString(b)
	if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() { admin.Exec(`DROP SCHEMA ` + schema + ` CASCADE`) })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// storeFeedback stores the records of feedbackLines under tenant acme and
// those of moreLines under tenant beta.
func storeFeedback(t *testing.T, d sqlstore.Dialect, dsn string) {
	t.Helper()
	ctx := context.Background()
	db, err := sqlstore.Open(ctx, d, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for tenant, lines := range map[string]string{"acme": feedbackLines, "beta": moreLines} {
		recs, err := feedback.Read(strings.NewReader(lines))
		if err != nil {
			t.Fatal(err)
		}
		for i := range recs {
			recs[i].Tenant = tenant
		}
		if err := db.AddFeedback(ctx, recs); err != nil {
			t.Fatal(err)
		}
	}
}

// allFeedback is the table of feedbackLines and moreLines together.
const allFeedback = `5 records

TOOL  CALLS  OK  FAILED  DEFERRED  STALLS  WEIGHT  FAILURES BY CODE
put   3      1   2       0         2       3.5     MCP_INVALID_PARAMS:1 TOOL_TIMEOUT:1
get   2      1   1       0         1       1.5     TOOL_TIMEOUT:1

CATEGORY   CALLS  OK  FAILED  DEFERRED  STALLS  WEIGHT  FAILURES BY CODE
execution  2      0   2       0         2       1.0     TOOL_TIMEOUT:2
argument   1      0   1       0         1       1.0     MCP_INVALID_PARAMS:1
`

func TestReportToolsStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lite := filepath.Join(dir, "warden.db")
	storeFeedback(t, sqlstore.SQLite, lite)
	files := []string{writeFeedbackFile(t, dir, "a.jsonl", feedbackLines), writeFeedbackFile(t, dir, "b.jsonl", moreLines)}
	missing := filepath.Join(dir, "nope.db")
	tests := []struct {
		name   string
		args   []string // after "report tools"; STORE is the --store value
		code   int
		stdout string
		stderr string // substring
	}{
		{"all", []string{"--store", "STORE"}, 0, allFeedback, ""},
		{"tenant", []string{"--store=STORE", "--tenant", "beta"}, 0, `1 records

TOOL  CALLS  OK  FAILED  DEFERRED  STALLS  WEIGHT  FAILURES BY CODE
get   1      0   1       0         1       0.0     TOOL_TIMEOUT:1

CATEGORY   CALLS  OK  FAILED  DEFERRED  STALLS  WEIGHT  FAILURES BY CODE
execution  1      0   1       0         1       0.0     TOOL_TIMEOUT:1
`, ""},
		{"tool", []string{"--tool=put", "--store", "STORE"}, 0, `3 records

TOOL  CALLS  OK  FAILED  DEFERRED  STALLS  WEIGHT  FAILURES BY CODE
put   3      1   2       0         2       3.5     MCP_INVALID_PARAMS:1 TOOL_TIMEOUT:1

CATEGORY   CALLS  OK  FAILED  DEFERRED  STALLS  WEIGHT  FAILURES BY CODE
argument   1      0   1       0         1       1.0     MCP_INVALID_PARAMS:1
execution  1      0   1       0         1       1.0     TOOL_TIMEOUT:1
`, ""},
		{"since a time, inclusive", []string{"--store", "STORE", "--since", "2026-01-02T03:04:07Z"}, 0, `3 records

TOOL  CALLS  OK  FAILED  DEFERRED  STALLS  WEIGHT  FAILURES BY CODE
get   2      1   1       0         1       1.5     TOOL_TIMEOUT:1
put   1      1   0       0         0       1.5     -

CATEGORY   CALLS  OK  FAILED  DEFERRED  STALLS  WEIGHT  FAILURES BY CODE
execution  1      0   1       0         1       0.0     TOOL_TIMEOUT:1
`, ""},
		{"since a date", []string{"--store", "STORE", "--since", "2026-01-03"}, 0, `0 records

TOOL  CALLS  OK  FAILED  DEFERRED  STALLS  WEIGHT  FAILURES BY CODE

CATEGORY  CALLS  OK  FAILED  DEFERRED  STALLS  WEIGHT  FAILURES BY CODE
`, ""},
		{"json", []string{"--json", "--store", "STORE", "--tenant", "acme", "--tool", "get"}, 0, `{
  "records": 1,
  "tools": [
    {
      "name": "get",
      "calls": 1,
      "successes": 1,
      "failures": 0,
      "deferred": 0,
      "by_code": [],
      "stalls": 0,
      "weight": 1.5
    }
  ],
  "categories": []
}
`, ""},
		{"files filtered the same way", append([]string{"-since=2026-01-02T03:04:07Z"}, files...), 0, `3 records

TOOL  CALLS  OK  FAILED  DEFERRED  STALLS  WEIGHT  FAILURES BY CODE
get   2      1   1       0         1       1.5     TOOL_TIMEOUT:1
put   1      1   0       0         0       1.5     -

CATEGORY   CALLS  OK  FAILED  DEFERRED  STALLS  WEIGHT  FAILURES BY CODE
execution  1      0   1       0         1       0.0     TOOL_TIMEOUT:1
`, ""},
		{"store and files", []string{"--store", "STORE", files[0]}, 2, "", "warden report: give feedback files or --store, not both\n\nusage:"},
		{"store without value", []string{"--store"}, 2, "", "warden report: --store needs a value\n"},
		{"store empty", []string{"--store="}, 2, "", "warden report: --store needs a value\n"},
		{"store twice", []string{"--store", "STORE", "--store", "STORE"}, 2, "", "warden report: --store given twice\n"},
		{"sqlite without path", []string{"--store", "sqlite:"}, 2, "", `warden report: --store: "sqlite:" has no PATH after sqlite:` + "\n"},
		{"postgres without url", []string{"--store", "postgres:"}, 2, "", `warden report: --store: "postgres:" has no URL after postgres:` + "\n"},
		{"memory", []string{"--store", "memory"}, 2, "", `warden report: --store: "memory"… is not sqlite:PATH or postgres:URL` + "\n"},
		{"url without kind, password not shown", []string{"--store", "postgresql://u:hunter2@h/db"}, 2, "", `warden report: --store: "postgresql"… is not sqlite:PATH or postgres:URL` + "\n"},
		{"missing sqlite file", []string{"--store", "sqlite:" + missing}, 2, "", "warden report: --store: stat " + missing + ": no such file or directory\n"},
		{"bad since", []string{"--store", "STORE", "--since", "yesterday"}, 2, "", `warden report: --since "yesterday": want a duration (24h), a date (2026-01-02) or an RFC 3339 time (2026-01-02T15:04:05Z)` + "\n"},
		{"negative since", []string{"--store", "STORE", "--since", "-1h"}, 2, "", "warden report: --since -1h: a duration back from now must be positive\n"},
		{"tenant twice", []string{"--tenant=a", "--tenant=b", files[0]}, 2, "", "warden report: --tenant given twice\n"},
		{"json with a value", []string{"--json=yes", files[0]}, 2, "", "warden report: --json takes no value\n"},
		{"nothing to read", []string{"--tenant", "acme"}, 2, "", "warden report: no feedback file given (or --store)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := []string{"report", "tools"}
			for _, a := range tt.args {
				args = append(args, strings.ReplaceAll(a, "STORE", "sqlite:"+lite))
			}
			var out, errb bytes.Buffer
			code := run(context.Background(), args, &out, &errb)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr=%s", code, tt.code, errb.String())
			}
			if out.String() != tt.stdout {
				t.Errorf("stdout:\n%s\nwant:\n%s", out.String(), tt.stdout)
			}
			if tt.stderr == "" && errb.Len() > 0 || !strings.Contains(errb.String(), tt.stderr) {
				t.Errorf("stderr = %q, want %q", errb.String(), tt.stderr)
			}
			if strings.Contains(errb.String(), "hunter2") {
				t.Errorf("stderr shows the password: %q", errb.String())
			}
		})
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing --store sqlite file was created: %v", err)
	}
}

// TestReportToolsStorePostgres: the same records on PostgreSQL give the
// same report as on SQLite.
func TestReportToolsStorePostgres(t *testing.T) {
	t.Parallel()
	dsn := reportPostgresDSN(t)
	storeFeedback(t, sqlstore.Postgres, dsn)
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"report", "tools", "--store", "postgres:" + dsn}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if out.String() != allFeedback {
		t.Fatalf("stdout:\n%s\nwant:\n%s", out.String(), allFeedback)
	}
	out.Reset()
	if code := run(context.Background(), []string{"report", "tools", "--store", "postgres:" + dsn, "--tenant", "beta", "--since", "2026-01-02"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.HasPrefix(out.String(), "1 records\n") {
		t.Fatalf("stdout:\n%s", out.String())
	}
}
