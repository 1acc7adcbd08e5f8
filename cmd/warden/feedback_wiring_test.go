package main

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/store/sqlstore"
	"github.com/agentwarden/warden/loop"
)

func toolEvent(seq int64, node, tool, outcome, code string, stalls int, status string) loop.Event {
	return loop.Event{Seq: seq, Task: "t1", Node: node, Kind: loop.KindTool, Tool: tool,
		Outcome: outcome, Code: code, Stalls: stalls, Status: status, Message: "msg", Level: "INFO"}
}

// TestFeedbackObserver records two sessions' events through the observer
// serve installs and reads them back with warden report tools --store.
func TestFeedbackObserver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "warden.db")
	db, err := sqlstore.Open(ctx, sqlstore.SQLite, path)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	observe, stop, err := feedbackObserver(db, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	acme := observe("acme", "s1")
	for _, e := range []loop.Event{
		{Seq: 1, Task: "t1", Node: "n1", Kind: loop.KindNode, Status: "RUNNING"},
		toolEvent(2, "n1", "get", "FAILED", "TOOL_TIMEOUT", 1, "RUNNING"), // retried
		{Seq: 3, Task: "t1", Node: "n1", Kind: loop.KindTool, Tool: "put", Status: "SKIPPED", Stalls: 1},
		toolEvent(4, "n1", "get", "SUCCESS", "", 0, "RUNNING"),
		toolEvent(5, "n1", "put", "REJECTED", "MCP_INVALID_PARAMS", 1, "RUNNING"), // changed
		toolEvent(6, "n1", "put", "SUCCESS", "", 0, "RUNNING"),
		{Seq: 7, Task: "t1", Node: "n1", Kind: loop.KindReact, Status: "no_tool_calls", Message: "done"},
	} {
		acme.Emit(e)
	}
	// The retry budget spent: the node failed with it.
	observe("beta", "s2").Emit(toolEvent(1, "n9", "get", "FAILED", "TOOL_TIMEOUT", 3, "FAILED"))
	if err := stop(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), `msg="feedback records" stored=5 lost=0`) {
		t.Errorf("logs: %s", logs.String())
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"all", nil, `5 records

TOOL  CALLS  OK  FAILED  DEFERRED  STALLS  WEIGHT  FAILURES BY CODE
get   3      1   2       0         2       2.5     TOOL_TIMEOUT:2
put   2      1   1       0         1       2.5     MCP_INVALID_PARAMS:1

CATEGORY   CALLS  OK  FAILED  DEFERRED  STALLS  WEIGHT  FAILURES BY CODE
execution  2      0   2       0         2       1.0     TOOL_TIMEOUT:2
argument   1      0   1       0         1       1.0     MCP_INVALID_PARAMS:1
`},
		{"one tenant", []string{"--tenant", "acme"}, `4 records

TOOL  CALLS  OK  FAILED  DEFERRED  STALLS  WEIGHT  FAILURES BY CODE
get   2      1   1       0         1       2.5     TOOL_TIMEOUT:1
put   2      1   1       0         1       2.5     MCP_INVALID_PARAMS:1

CATEGORY   CALLS  OK  FAILED  DEFERRED  STALLS  WEIGHT  FAILURES BY CODE
argument   1      0   1       0         1       1.0     MCP_INVALID_PARAMS:1
execution  1      0   1       0         1       1.0     TOOL_TIMEOUT:1
`},
		{"the last hour", []string{"--since", "1h", "--tool", "get", "--tenant", "beta"}, `1 records

TOOL  CALLS  OK  FAILED  DEFERRED  STALLS  WEIGHT  FAILURES BY CODE
get   1      0   1       0         1       0.0     TOOL_TIMEOUT:1

CATEGORY   CALLS  OK  FAILED  DEFERRED  STALLS  WEIGHT  FAILURES BY CODE
execution  1      0   1       0         1       0.0     TOOL_TIMEOUT:1
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			args := append([]string{"report", "tools", "--store", "sqlite:" + path}, tt.args...)
			if code := run(ctx, args, &out, &errb); code != 0 || errb.Len() > 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			if out.String() != tt.want {
				t.Fatalf("stdout:\n%s\nwant:\n%s", out.String(), tt.want)
			}
		})
	}
}

// TestFeedbackObserverLoses: records the database cannot take are logged
// as they are lost, and stop reports the first error.
func TestFeedbackObserverLoses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sqlstore.Open(ctx, sqlstore.SQLite, filepath.Join(t.TempDir(), "warden.db"))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	observe, stop, err := feedbackObserver(db, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	sink := observe("acme", "s1")
	sink.Emit(toolEvent(1, "n1", "get", "FAILED", "TOOL_TIMEOUT", 1, "RUNNING"))
	err = stop(ctx)
	want := "feedback: store 1 records: sqlstore: add feedback: sql: database is closed"
	if err == nil || err.Error() != want {
		t.Fatalf("stop: %v, want %q", err, want)
	}
	for _, line := range []string{
		`level=ERROR msg="feedback records lost" records=1 lost_total=1 error="` + want + `"`,
		`msg="feedback records" stored=0 lost=1`,
	} {
		if !strings.Contains(logs.String(), line) {
			t.Errorf("logs lack %s:\n%s", line, logs.String())
		}
	}
	if _, _, err := feedbackObserver(nil, nil); err == nil {
		t.Error("no database accepted")
	}
}
