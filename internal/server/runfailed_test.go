package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/fakeprovider"
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/model/openai"
	mscripted "github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/internal/server"
)

// brokenModel fails every turn with an error that is no provider answer
// and quotes a secret, as a broken proxy's error might.
type brokenModel struct{}

func (brokenModel) Complete(context.Context, model.Request) (model.Response, error) {
	return model.Response{}, errors.New("proxy broke: token=sk-secret-9")
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// post sends a message and returns the answer's status, X-Request-Id and
// error body.
func post(t *testing.T, f *fixture, sid, requestID string) (int, string, server.ErrorBody, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", f.ts.URL+"/v1/sessions/"+sid+"/messages?wait=5m", strings.NewReader(`{"text":"帮我建一个网站"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+keyAcme)
	if requestID != "" {
		req.Header.Set("X-Request-Id", requestID)
	}
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var eb server.ErrorBody
	_ = json.Unmarshal(b, &eb)
	return resp.StatusCode, resp.Header.Get("X-Request-Id"), eb, b
}

// A run that fails on something other than the provider answers 500
// run_failed saying what failed, never the error's text, with a request
// id that the answer's header, the error body, the task's reason and the
// server log's line with the cause all carry. A caller's safe
// X-Request-Id is kept; an unsafe one is replaced.
func TestRunFailedSaysWhatFailed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, sent string
		keep       bool
	}{
		{"the server's id", "", false},
		{"the gateway's id", "gw-7f3a.1_b", true},
		{"an id unsafe to log is replaced", "bad id level=ERROR", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			logs := &syncBuffer{}
			f := buildFixture(t, fixtureSetup{options: func(o *server.Options) {
				o.NewModel = func(string, string) (model.Model, error) { return brokenModel{}, nil }
				o.Logger = slog.New(slog.NewTextHandler(logs, nil))
			}})
			sid := f.session(t, keyAcme)
			status, rid, eb, raw := post(t, f, sid, tt.sent)
			if tt.keep && rid != tt.sent || !tt.keep && !strings.HasPrefix(rid, "req_") {
				t.Fatalf("X-Request-Id %q (sent %q)", rid, tt.sent)
			}
			want := "the runtime failed while running the task: the model call failed without an answer from the provider (request " + rid + "; the server log has the cause)"
			if status != http.StatusInternalServerError || eb.Error.Code != server.CodeRunFailed || eb.Error.Message != want || eb.Error.RequestID != rid {
				t.Fatalf("answer %d %s", status, raw)
			}
			if strings.Contains(string(raw), "sk-secret") {
				t.Fatalf("the answer quotes the error: %s", raw)
			}
			var task server.Task
			if code, eb := f.do(t, "GET", "/v1/sessions/"+sid+"/tasks/t1", keyAcme, "", &task); code != http.StatusOK {
				t.Fatalf("task: %d %+v", code, eb)
			}
			if task.Status != "FAILED" || task.Reason != want {
				t.Fatalf("task %s %q", task.Status, task.Reason)
			}
			// The trace ends as the task did: a final TASK event with the
			// code and the cause, timed.
			var trace struct{ Events []server.Event }
			if code, eb := f.do(t, "GET", "/v1/sessions/"+sid+"/tasks/t1/trace", keyAcme, "", &trace); code != http.StatusOK || len(trace.Events) == 0 {
				t.Fatalf("trace: %d %+v %+v", code, eb, trace)
			}
			end := trace.Events[len(trace.Events)-1]
			if end.Kind != "TASK" || end.Status != "FAILED" || end.Name != server.CodeRunFailed || end.Message != want || end.Level != "WARN" || end.Time.IsZero() {
				t.Fatalf("final event %+v", end)
			}
			for _, e := range trace.Events {
				if e.Time.IsZero() || e.Time.After(time.Now()) {
					t.Fatalf("event %d at %v", e.Seq, e.Time)
				}
			}
			var line string
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, `msg="run failed"`) {
					line = l
				}
			}
			if !strings.Contains(line, "request_id="+rid+" ") || !strings.Contains(line, "proxy broke: token=sk-secret-9") {
				t.Fatalf("log line %q lacks the request id or the cause:\n%s", line, logs.String())
			}
		})
	}
}

// A model turn whose calls share an id no longer fails the run: neither
// call runs (the first builtin_node_fail would have failed the node with
// its reason), the model is told, and the task ends as its next turn
// says.
func TestDuplicateCallIDsDoNotFailTheRun(t *testing.T) {
	t.Parallel()
	f := buildFixture(t, fixtureSetup{turns: []mscripted.Turn{
		{ToolCalls: []mscripted.Call{
			{ID: "call_same", Name: "builtin_node_fail", Arguments: `{"reason":"first"}`},
			{ID: "call_same", Name: "builtin_node_fail", Arguments: `{"reason":"second"}`},
		}},
		{Expect: &mscripted.Expect{Code: "MODEL_TURN_INVALID", Contains: `"call_same"`},
			ToolCalls: []mscripted.Call{{Name: "builtin_node_fail", Arguments: `{"reason":"gave up after the refusal"}`}}},
	}})
	sid := f.session(t, keyAcme)
	status, _, _, raw := post(t, f, sid, "")
	if status != http.StatusOK {
		t.Fatalf("answer %d %s", status, raw)
	}
	var res server.RunResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if res.Task.Status != "FAILED" || !strings.Contains(res.Task.Reason, "gave up after the refusal") {
		t.Fatalf("task %s %q", res.Task.Status, res.Task.Reason)
	}
}

// Through warden serve, a chatty model on a provider that refuses a
// conversation ending with the assistant's message (Mistral) goes on:
// its text turn is answered, the provider takes the next request, and the
// task ends as the model's next turn says, not 502 model_request_rejected.
func TestChattyModelOnAStrictProviderThroughServe(t *testing.T) {
	t.Parallel()
	prov := fakeprovider.New(t,
		fakeprovider.Text("好的，我先想一想。"),
		fakeprovider.Reply{Calls: []fakeprovider.Call{{ID: "call_f", Name: "builtin_node_fail", Arguments: `{"reason":"没有可用的空间"}`}}},
	)
	prov.RequireUserOrToolLast()
	cfg := openai.Defaults(prov.BaseURL(), "", "gpt-test")
	cfg.MaxRetries = 0
	m, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := buildFixture(t, fixtureSetup{options: func(o *server.Options) {
		o.NewModel = func(string, string) (model.Model, error) { return m, nil }
	}})
	sid := f.session(t, keyAcme)
	status, _, _, raw := post(t, f, sid, "")
	if status != http.StatusOK {
		t.Fatalf("answer %d %s", status, raw)
	}
	var res server.RunResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if res.Task.Status != "FAILED" || !strings.Contains(res.Task.Reason, "没有可用的空间") || len(prov.Requests()) != 2 {
		t.Fatalf("task %s %q after %d requests", res.Task.Status, res.Task.Reason, len(prov.Requests()))
	}
}
