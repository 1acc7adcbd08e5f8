package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/fakeprovider"
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
	// Ten plugin lines, then the scenario's four events.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 14 || !strings.HasPrefix(lines[0], `{"kind":"PLUGIN","plugin":"ArgPolicy",`) {
		t.Fatalf("%d lines:\n%s", len(lines), out)
	}
	var e map[string]any
	if err := json.Unmarshal([]byte(lines[11]), &e); err != nil {
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

// warden run --model openai says what the provider answered, and exits 3
// when it failed.
func TestRunOpenAIProviderFailures(t *testing.T) {
	t.Parallel()
	const scenarioFile = acceptance + "07-tool-timeout.yaml"
	tests := []struct {
		name    string
		replies []fakeprovider.Reply
		flags   []string
		code    int
		stderr  string
		stdout  string
	}{
		{
			name:    "401",
			replies: []fakeprovider.Reply{fakeprovider.Unauthorized("sk-wrong-key-0000")},
			code:    3,
			stderr: `level=WARN msg="model/openai: tool sent without strict schema" tool=builtin_state_set reason="$.properties.value: strict mode needs a type"` + "\n" +
				"warden run: 07 a business tool times out: model: provider authentication failed: HTTP 401 (invalid_api_key): Incorrect API key provided: sk-...0000. You can find your API key at https://platform.openai.com/account/api-keys.\n",
			stdout: "--- ERROR (model provider failed: auth) 07 a business tool times out: node RUNNING, task RUNNING",
		},
		{
			name:    "context length",
			replies: []fakeprovider.Reply{fakeprovider.ContextLength()},
			code:    3,
			stderr: `level=WARN msg="model/openai: tool sent without strict schema" tool=builtin_state_set reason="$.properties.value: strict mode needs a type"` + "\n" +
				"warden run: 07 a business tool times out: model: context length exceeded: HTTP 400 (context_length_exceeded): This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.\n",
			stdout: "--- ERROR (model provider failed: context_length) 07 a business tool times out: node RUNNING, task RUNNING",
		},
		{
			name:    "429 until the retries run out, each retry logged",
			replies: []fakeprovider.Reply{fakeprovider.RateLimited(10 * time.Millisecond)},
			flags:   []string{"--model-max-retries", "1", "--model-stream"},
			code:    3,
			stderr: `level=WARN msg="model/openai: tool sent without strict schema" tool=builtin_state_set reason="$.properties.value: strict mode needs a type"` + "\n" +
				`level=WARN msg="model/openai: retrying" attempt=1 wait=10ms error="model: provider rate limited: HTTP 429 (rate_limit_exceeded): Rate limit reached for requests. Please try again in 10ms."` + "\n" +
				"warden run: 07 a business tool times out: model: provider rate limited: HTTP 429 (rate_limit_exceeded): Rate limit reached for requests. Please try again in 10ms. (after 2 attempts)\n",
			stdout: "--- ERROR (model provider failed: rate_limited) 07 a business tool times out: node RUNNING, task RUNNING",
		},
		{
			name:    "an exhausted quota exits 4, not retried",
			replies: []fakeprovider.Reply{fakeprovider.InsufficientQuota()},
			flags:   []string{"--model-max-retries", "3"},
			code:    4,
			stderr: `level=WARN msg="model/openai: tool sent without strict schema" tool=builtin_state_set reason="$.properties.value: strict mode needs a type"` + "\n" +
				"warden run: 07 a business tool times out: model: provider quota exhausted: HTTP 429 (insufficient_quota): You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.\n",
			stdout: "--- ERROR (model provider failed: quota) 07 a business tool times out: node RUNNING, task RUNNING",
		},
		{
			name:    "garbage",
			replies: []fakeprovider.Reply{fakeprovider.Garbage()},
			code:    3,
			stderr: `level=WARN msg="model/openai: tool sent without strict schema" tool=builtin_state_set reason="$.properties.value: strict mode needs a type"` + "\n" +
				"warden run: 07 a business tool times out: model: malformed provider response: HTTP 200 OK: the body is not a chat completion (invalid character '<' looking for beginning of value): text/html, 41 bytes: 502 Bad Gateway\n",
			stdout: "--- ERROR (model provider failed: malformed) 07 a business tool times out: node RUNNING, task RUNNING",
		},
		{
			name:    "a text answer runs",
			replies: []fakeprovider.Reply{fakeprovider.Text("请告诉我空间名。")},
			code:    0,
			stdout:  "--- DONE (real model: expectations not checked) 07 a business tool times out",
		},
		{
			name:   "bad model flag",
			flags:  []string{"--model-attempt-timeout", "5m", "--model-call-timeout", "1m"},
			code:   2,
			stderr: "warden run: --model-attempt-timeout: 5m0s exceeds --model-call-timeout 1m0s\n",
		},
		{
			name:   "bad tool choice",
			flags:  []string{"--model-tool-choice", "any"},
			code:   2,
			stderr: "warden run: --model-tool-choice: \"any\" is not auto, none or required\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			replies := tt.replies
			if replies == nil {
				replies = []fakeprovider.Reply{fakeprovider.Text("unused")}
			}
			srv := fakeprovider.New(t, replies...)
			args := append([]string{"--model", "openai", "--base-url", srv.BaseURL(), "--model-name", "gpt-test",
				"--model-backoff", "1ms"}, tt.flags...)
			code, out, errs := runRun(t, append(args, scenarioFile)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errs)
			}
			if tt.stderr != "" && errs != tt.stderr {
				t.Errorf("stderr:\n%s\nwant:\n%s", errs, tt.stderr)
			}
			if tt.stdout != "" && !strings.Contains(out, tt.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tt.stdout, out)
			}
		})
	}
}

// Every model flag of warden run is in its usage text, which documents
// exit code 3.
func TestRunUsageListsModelFlags(t *testing.T) {
	t.Parallel()
	code, _, errs := runRun(t, "--help")
	if code != 2 || errs != runUsage {
		t.Fatalf("--help: exit %d\n%s", code, errs)
	}
	for _, k := range []string{keyAttemptTimeout, keyCallTimeout, keyMaxRetries, keyBackoff, keyMaxBackoff, keyStream, keyStrict, keyParallel, keyToolChoice} {
		if !strings.Contains(runUsage, "\n  --"+k+" ") && !strings.Contains(runUsage, "\n  --"+k+"=") {
			t.Errorf("usage does not list --%s", k)
		}
	}
	if !strings.Contains(runUsage, "3 when the model provider") {
		t.Errorf("usage does not document exit code 3")
	}
}

// A task scenario's trace ends with its graph, after the nodes' traces;
// --json prints it as one GRAPH line after the events.
func TestRunTaskGraph(t *testing.T) {
	t.Parallel()
	const file = "../../examples/scenarios/tasks/delegation-evidence.yaml"
	tests := []struct {
		name  string
		args  []string
		after string
		want  string
	}{
		{
			name:  "readable",
			args:  []string{"--native", file},
			after: "#17 TASK    stalls=0 DONE",
			want:  "graph:\n    t1.n1 site.builder DONE upstream t1.n1.d1 → create_site (claimed)\n    t1.n1.d1 space.finder DONE ← t1.n1\n--- PASS delegation: the pre-node's evidence binds the caller's write: node DONE, task DONE",
		},
		{
			name:  "json",
			args:  []string{"--native", "--json", file},
			after: `"kind":"TASK"`,
			want: `{"kind":"GRAPH","scenario":"delegation: the pre-node's evidence binds the caller's write","graph":[` +
				`{"node":"t1.n1","skill":"site.builder","status":"DONE","upstream":["t1.n1.d1"],"target":"create_site","claimed":true},{"node":"t1.n1.d1","skill":"space.finder","status":"DONE","parent":"t1.n1"}]}` + "\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, errs := runRun(t, tt.args...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
			}
			i, j := strings.LastIndex(out, tt.after), strings.Index(out, tt.want)
			if j < 0 {
				t.Fatalf("stdout lacks %q:\n%s", tt.want, out)
			}
			if i < 0 || i > j {
				t.Errorf("the graph is not after %q:\n%s", tt.after, out)
			}
		})
	}
}
