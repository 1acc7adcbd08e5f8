package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
