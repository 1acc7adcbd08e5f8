package feedback

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/loop"
)

func tool(seq int64, node, name, outcome, code string, stalls int, status string) loop.Event {
	e := loop.Event{Seq: seq, Task: "t1", Node: node, Kind: loop.KindTool, Tool: name,
		Outcome: outcome, Code: code, Stalls: stalls, Status: status, Message: "msg", Level: "INFO"}
	return e
}

func TestFromEvent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		e      loop.Event
		prev   int
		seen   bool
		result string
		next   string
		weight float64
		added  int
		cat    string
	}{
		{"success", tool(1, "n", "get", "SUCCESS", "", 0, "RUNNING"), 2, true, ResultSuccess, "", 1.5, 0, ""},
		{"timeout retried", tool(2, "n", "get", "FAILED", "agent_runtime.40016", 1, "RUNNING"), 0, true, ResultRetrying, "retry", 1.0, 1, "execution"},
		{"bad params changed", tool(3, "n", "put", "REJECTED", "MCP_INVALID_PARAMS", 2, "RUNNING"), 1, true, ResultRetrying, "change", 1.0, 1, "argument"},
		{"budget spent", tool(4, "n", "get", "FAILED", "agent_runtime.40016", 3, "FAILED"), 2, true, ResultFailed, "stop", 0, 1, "execution"},
		{"unrecoverable", tool(5, "n", "p", "FAILED", "agent_runtime.50003", 1, "RUNNING"), 0, true, ResultFailed, "stop", 0, 1, "execution"},
		{"no code", tool(6, "n", "p", "FAILED", "", 1, "RUNNING"), 0, false, ResultFailed, "stop", 0, 1, ""},
		{"deferred", tool(7, "n", "put", "DEFERRED", "agent_runtime.42221", 1, "SUSPENDED"), 1, true, ResultDeferred, "wait", 0, 0, "permission"},
		{"unseen node, no stall", tool(8, "n", "put", "REJECTED", "agent_runtime.40027", 0, "RUNNING"), 0, false, ResultRetrying, "change", 1.0, 0, "tool_choice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := FromEvent(tt.e, tt.prev, tt.seen)
			if err != nil {
				t.Fatal(err)
			}
			if r.Result != tt.result || r.Next != tt.next || r.Weight != tt.weight || r.StallsAdded != tt.added || r.Category != tt.cat {
				t.Errorf("got result=%s next=%s weight=%v added=%d cat=%s, want %s %s %v %d %s",
					r.Result, r.Next, r.Weight, r.StallsAdded, r.Category, tt.result, tt.next, tt.weight, tt.added, tt.cat)
			}
			if r.Step != tt.e.Seq || r.Tool != tt.e.Tool || r.Message != "msg" {
				t.Errorf("identity not copied: %+v", r)
			}
		})
	}
	if _, err := FromEvent(tool(9, "n", "x", "MAYBE", "", 0, ""), 0, false); err == nil {
		t.Error("bad outcome accepted")
	}
}

func TestSinkWritesAndReads(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	s := NewSink(&buf, "s1")
	s.Now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	s.Digest = func(e loop.Event) string { return "sha256:" + e.Tool }
	events := []loop.Event{
		{Seq: 1, Task: "t1", Node: "n1", Kind: loop.KindNode, Status: "RUNNING", Stalls: 0},
		tool(2, "n1", "get", "FAILED", "agent_runtime.40016", 1, "RUNNING"),
		{Seq: 3, Task: "t1", Node: "n1", Kind: loop.KindTool, Tool: "get", Status: "SKIPPED", Stalls: 1},
		tool(4, "n1", "get", "SUCCESS", "", 0, "RUNNING"),
		{Seq: 5, Task: "t1", Node: "n1", Kind: loop.KindReact, Status: "no_tool_calls"},
	}
	for _, e := range events {
		s.Emit(e)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	want := `{"time":"2026-01-02T03:04:05Z","session":"s1","task":"t1","node":"n1","step":2,"tool":"get","args_digest":"sha256:get","outcome":"FAILED","message":"msg","code":"agent_runtime.40016","name":"TOOL_TIMEOUT","category":"execution","recoverable":true,"next":"retry","status":"RUNNING","stalls":1,"stalls_added":1,"result":"retrying","weight":1}
{"time":"2026-01-02T03:04:05Z","session":"s1","task":"t1","node":"n1","step":4,"tool":"get","args_digest":"sha256:get","outcome":"SUCCESS","message":"msg","status":"RUNNING","stalls":0,"stalls_added":0,"result":"success","weight":1.5}
`
	if buf.String() != want {
		t.Fatalf("lines:\n%s\nwant:\n%s", buf.String(), want)
	}
	recs, err := Read(strings.NewReader(buf.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Weight+recs[1].Weight != 2.5 || recs[0].Name != "TOOL_TIMEOUT" || recs[1].ArgsDigest != "sha256:get" {
		t.Fatalf("read back %+v", recs)
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) { w.n++; return 0, errors.New("disk full") }

func TestSinkWriteError(t *testing.T) {
	t.Parallel()
	w := &failWriter{}
	s := NewSink(w, "")
	s.Emit(tool(1, "n", "get", "SUCCESS", "", 0, "RUNNING"))
	s.Emit(tool(2, "n", "get", "SUCCESS", "", 0, "RUNNING"))
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "disk full") || w.n != 1 {
		t.Fatalf("err=%v writes=%d", err, w.n)
	}
}

func TestReadBadLines(t *testing.T) {
	t.Parallel()
	good := `{"step":1,"tool":"get","outcome":"SUCCESS","result":"success","weight":1.5}`
	tests := []struct {
		name, in, err string
		n             int
	}{
		{"empty", "", "", 0},
		{"blank lines", "\n" + good + "\n  \n" + good + "\n", "", 2},
		{"not json", good + "\n{oops\n", "feedback: line 2: not a feedback record: invalid character 'o'", 1},
		{"no tool", `{"outcome":"SUCCESS"}`, "feedback: line 1: not a feedback record: no tool", 0},
		{"bad outcome", `{"tool":"x","outcome":"MAYBE"}`, `feedback: line 1: not a feedback record: outcome "MAYBE"`, 0},
		{"wrong type", `{"tool":"x","outcome":"SUCCESS","weight":"high"}`, "feedback: line 1: not a feedback record: json: cannot unmarshal", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, err := Read(strings.NewReader(tt.in))
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.err) || !errors.Is(err, ErrBadRecord)) {
				t.Fatalf("err = %v, want prefix %q", err, tt.err)
			}
			if len(recs) != tt.n {
				t.Fatalf("got %d records, want %d", len(recs), tt.n)
			}
		})
	}
}

func rec(tool, outcome, name, cat string, added int, w float64) Record {
	code := ""
	if name != "" {
		code = "w." + name
	}
	return Record{Tool: tool, Outcome: outcome, Code: code, Name: name, Category: cat, StallsAdded: added, Weight: w}
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	recs := []Record{
		rec("get", "SUCCESS", "", "", 0, 1.5),
		rec("get", "SUCCESS", "", "", 0, 1.5),
		rec("put", "FAILED", "TOOL_TIMEOUT", "execution", 1, 1),
		rec("put", "FAILED", "TOOL_TIMEOUT", "execution", 1, 0),
		rec("put", "REJECTED", "MCP_INVALID_PARAMS", "argument", 1, 1),
		rec("put", "DEFERRED", "APPROVAL_REQUIRED", "permission", 0, 0),
		rec("put", "SUCCESS", "", "", 0, 1.5),
		rec("del", "FAILED", "", "", 1, 0),
		rec("ask", "FAILED", "TOOL_TIMEOUT", "execution", 1, 1),
	}
	got := Summarize(recs)
	want := Report{
		Records: 9,
		Tools: []Row{
			{Name: "put", Calls: 5, Successes: 1, Failures: 3, Deferred: 1, Stalls: 3, Weight: 3.5,
				ByCode: []CodeCount{{"w.TOOL_TIMEOUT", "TOOL_TIMEOUT", 2}, {"w.MCP_INVALID_PARAMS", "MCP_INVALID_PARAMS", 1}}},
			{Name: "ask", Calls: 1, Failures: 1, Stalls: 1, Weight: 1,
				ByCode: []CodeCount{{"w.TOOL_TIMEOUT", "TOOL_TIMEOUT", 1}}},
			{Name: "del", Calls: 1, Failures: 1, Stalls: 1, Weight: 0,
				ByCode: []CodeCount{{"", NoCode, 1}}},
			{Name: "get", Calls: 2, Successes: 2, Weight: 3, ByCode: []CodeCount{}},
		},
		Categories: []Row{
			{Name: "execution", Calls: 3, Failures: 3, Stalls: 3, Weight: 2,
				ByCode: []CodeCount{{"w.TOOL_TIMEOUT", "TOOL_TIMEOUT", 3}}},
			{Name: "argument", Calls: 1, Failures: 1, Stalls: 1, Weight: 1,
				ByCode: []CodeCount{{"w.MCP_INVALID_PARAMS", "MCP_INVALID_PARAMS", 1}}},
			{Name: "permission", Calls: 1, Deferred: 1, ByCode: []CodeCount{}},
		},
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("got\n%s\nwant\n%s", g, w)
	}
	if e := Summarize(nil); e.Records != 0 || len(e.Tools) != 0 || e.Tools == nil {
		t.Fatalf("empty: %+v", e)
	}
}
