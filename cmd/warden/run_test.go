package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cmdRun(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

const acceptance = "../../examples/scenarios/acceptance/"

func TestRunExitCodes(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(acceptance + "07-tool-timeout.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.yaml")
	if err := os.WriteFile(broken, bytes.Replace(src, []byte("status: FAILED"), []byte("status: DONE"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     []string
		stderr     []string
		notInStdio string
	}{
		{name: "no files", args: nil, code: 2, stderr: []string{"usage: warden run"}},
		{name: "missing file", args: []string{filepath.Join(dir, "none.yaml")}, code: 2, stderr: []string{"warden run: scenario: invalid scenario: open "}},
		{name: "unknown model", args: []string{"--model", "claude", acceptance + "07-tool-timeout.yaml"}, code: 2, stderr: []string{`warden run: unknown model "claude" (want openai)`}},
		{name: "openai without url", args: []string{"--model", "openai", acceptance + "07-tool-timeout.yaml"}, code: 2, stderr: []string{"--model openai needs --base-url and --model-name"}},
		{
			name: "passes, readable trace, FAILED logged at WARN", args: []string{acceptance + "07-tool-timeout.yaml"}, code: 0,
			stdout: []string{
				"#1 TOOL    query_space FAILED TOOL_TIMEOUT (agent_runtime.40016) stalls=1 RUNNING: 工具 query_space 在 100ms 内没有返回。下一步：缩小查询范围后重试；写操作不要重复调用，等待核实\n",
				"--- PASS 07 a business tool times out: node FAILED, task FAILED",
			},
			stderr: []string{"level=WARN msg=\"tool call failed\"", "name=TOOL_TIMEOUT"},
		},
		{
			name: "expectation fails", args: []string{broken}, code: 1,
			stdout: []string{"--- FAIL 07 a business tool times out", "    node status FAILED, want DONE (reason \"空间服务超时\")"},
		},
		{
			name: "pending is skipped, not passed", args: []string{"testdata/pending.yaml"}, code: 0,
			stdout: []string{"--- SKIP (pending: "}, notInStdio: "PASS",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, errs := runRun(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errs)
			}
			for _, s := range tt.stdout {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, out)
				}
			}
			for _, s := range tt.stderr {
				if !strings.Contains(errs, s) {
					t.Errorf("stderr lacks %q:\n%s", s, errs)
				}
			}
			if tt.notInStdio != "" && strings.Contains(out, tt.notInStdio) {
				t.Errorf("stdout has %q:\n%s", tt.notInStdio, out)
			}
		})
	}
}

// --json prints one event per line with the fields of issue 6 item 4.
func TestRunJSON(t *testing.T) {
	t.Parallel()
	code, out, errs := runRun(t, "--json", acceptance+"01-write-deferred-then-approval.yaml")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines:\n%s", len(lines), out)
	}
	var e map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &e); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"seq": 2.0, "task": "t1", "node": "n1", "kind": "TOOL", "tool": "create_site", "outcome": "DEFERRED",
		"code": "agent_runtime.42221", "name": "APPROVAL_REQUIRED", "category": "permission", "stalls": 0.0, "status": "RUNNING", "level": "INFO",
		"message": "该写操作须经用户确认。下一步：调用 builtin_node_approval 申请用户确认，toolName 填 create_site"}
	for k, v := range want {
		if e[k] != v {
			t.Errorf("%s = %v, want %v", k, e[k], v)
		}
	}
	if !strings.Contains(errs, "--- PASS 01 write deferred, then approval suspends") {
		t.Errorf("summary not on stderr: %s", errs)
	}
}

// --feedback appends a record per executed tool call, which `warden report
// tools` reads back.
func TestRunFeedback(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "feedback.jsonl")
	if code, out, errs := runRun(t, "--feedback", path, acceptance+"07-tool-timeout.yaml"); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errs)
	}
	var out, errs bytes.Buffer
	if code := run(context.Background(), []string{"report", "tools", path}, &out, &errs); code != 0 {
		t.Fatalf("report: exit %d: %s", code, errs.String())
	}
	if !strings.Contains(out.String(), "TOOL_TIMEOUT:1") {
		t.Fatalf("report lacks the timeout:\n%s", out.String())
	}
	if code, _, errs := runRun(t, "--feedback", filepath.Join(t.TempDir(), "missing", "f.jsonl"), acceptance+"07-tool-timeout.yaml"); code != 2 || !strings.Contains(errs, "warden run: --feedback: open ") {
		t.Fatalf("unwritable feedback file: exit %d, %s", code, errs)
	}
}
