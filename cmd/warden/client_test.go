package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const (
	approvalFile = "examples/scenarios/acceptance/08-confirmed-write-succeeds.yaml"
	followUpFile = "examples/scenarios/acceptance/04-follow-up-answered.yaml"
	verifyFile   = "examples/scenarios/reliability/write-timeout-not-reissued.yaml"

	askSite = "帮我在市场部空间建一个网站，标题叫 Spring Launch"
)

// clientStep is one command line of a client session and what it prints;
// {name} in args and outputs is a value the session learnt (S the
// session, A the approval).
type clientStep struct {
	name           string
	key            string
	args           []string
	code           int
	stdout, stderr string
}

// runSteps runs the steps in order against f; after each, it learns the
// approval the session's first task waits for, as A.
func runSteps(t *testing.T, f *clientFixture, vars map[string]string, steps []clientStep) {
	t.Helper()
	for _, st := range steps {
		args := make([]string, len(st.args))
		for i, a := range st.args {
			args[i] = expand(a, vars)
		}
		code, stdout, stderr := f.cli(st.key, args...)
		if vars["A"] == "" && vars["S"] != "" {
			var s struct{ Tasks []struct{ Approval string } }
			if json.Unmarshal([]byte(f.raw(clientAcme, "/v1/sessions/"+vars["S"])), &s) == nil && len(s.Tasks) > 0 {
				vars["A"] = s.Tasks[0].Approval
			}
		}
		if want, wantErr := expand(st.stdout, vars), expand(st.stderr, vars); code != st.code || stdout != want || stderr != wantErr {
			t.Fatalf("%s: warden %s = %d\nstdout:\n%s\nstderr:\n%s\nwant %d\nstdout:\n%s\nstderr:\n%s",
				st.name, strings.Join(args, " "), code, stdout, stderr, st.code, want, wantErr)
		}
	}
}

// approvalTrace is the trace of the approval scenario's task up to its
// suspension.
const approvalTrace = `#1 TASK    stalls=0 PLANNED: SINGLE n1:site.builder
#2 NODE    [t1.n1] stalls=0 RUNNING: 帮我在市场部空间建一个网站，标题叫 Spring Launch
#3 TOOL    [t1.n1] query_space SUCCESS stalls=0 RUNNING: 工具 query_space 调用成功
#4 TOOL    [t1.n1] create_site DEFERRED APPROVAL_REQUIRED (agent_runtime.42221) by WriteGate (writegate@1.0.0) stalls=0 RUNNING: 该写操作须经用户确认。下一步：调用 builtin_node_approval 申请用户确认，toolName 填 create_site
#5 TOOL    [t1.n1] builtin_node_approval SUCCESS stalls=0 SUSPENDED: 已请求用户确认写操作 create_site，节点挂起等待确认
#6 SUSPEND [t1.n1] create_site stalls=0 APPROVAL: 在市场部空间创建网站 Spring Launch ⏎ 网站标题：Spring Launch ⏎ 空间：42
#7 TASK    stalls=0 SUSPENDED: 在市场部空间创建网站 Spring Launch ⏎ 网站标题：Spring Launch ⏎ 空间：42
`

// approvalWait is how the client shows the approval scenario's task once
// it waits for the write's approval.
const approvalWait = `task t1 SUSPENDED at node t1.n1
waits for  APPROVAL
question   在市场部空间创建网站 Spring Launch ⏎ 网站标题：Spring Launch ⏎ 空间：42
approval   {A}
tool       create_site
arguments  网站标题: Spring Launch; 空间: 42
answer     warden approvals confirm|reject|cancel {A}
`

// TestClientApprovalFlow drives a held write from the message to its
// confirmation through the client, reading the session, the task, its
// trace and the approval on the way, as a tenant's operator would.
func TestClientApprovalFlow(t *testing.T) {
	t.Parallel()
	f := newClientFixture(t, approvalFile, 0)
	code, stdout, stderr := f.cli(clientAcme, "sessions", "list")
	if code != 0 || stdout != "no sessions\n" || stderr != "" {
		t.Fatalf("sessions list before any = %d %q %q", code, stdout, stderr)
	}
	vars := map[string]string{"S": f.newSession(clientAcme)}
	runSteps(t, f, vars, []clientStep{
		{"sessions list", clientAcme, []string{"sessions", "list"}, 0,
			"SESSION                             CREATED\n{S}  2026-12-01T09:30:00Z\n", ""},
		{"a new session", clientAcme, []string{"sessions", "show", "{S}"}, 0,
			"session  {S}\ncreated  2026-12-01T09:30:00Z\nno tasks\n", ""},
		{"send waits for the approval", clientAcme, []string{"sessions", "send", "{S}", askSite}, 0, approvalWait, ""},
		{"the session's tasks", clientAcme, []string{"sessions", "show", "{S}"}, 0,
			"session  {S}\ncreated  2026-12-01T09:30:00Z\n\n" +
				"TASK  STATUS     WAITS FOR                                     OBJECTIVE\n" +
				"t1    SUSPENDED  APPROVAL {A}  " + askSite + "\n", ""},
		{"a second message while one waits", clientAcme, []string{"sessions", "send", "{S}", "再建一个"}, 1,
			"", "warden: task_pending: task t1 waits for the user's answer\n"},
		{"tasks show", clientAcme, []string{"tasks", "show", "{S}", "t1"}, 0, approvalWait, ""},
		{"tasks trace", clientAcme, []string{"tasks", "trace", "{S}", "t1"}, 0, approvalTrace, ""},
		{"tasks watch a waiting task", clientAcme, []string{"tasks", "watch", "{S}", "t1"}, 0, approvalTrace + approvalWait, ""},
		{"approvals list", clientAcme, []string{"approvals", "list"}, 0,
			"APPROVAL                             STATUS   SESSION                             TASK  TOOL         CREATED               QUESTION\n" +
				"{A}  PENDING  {S}  t1    create_site  2026-12-01T09:30:00Z  在市场部空间创建网站 Spring Launch ⏎ 网站标题：Spring Launch ⏎ 空间：42\n", ""},
		{"approvals list, none confirmed", clientAcme, []string{"approvals", "list", "--status", "confirmed"}, 0, "no approvals\n", ""},
		{"approvals list, bad status", clientAcme, []string{"approvals", "list", "--status", "maybe"}, 1,
			"", "warden: invalid_request: status must be PENDING, CONFIRMED, REJECTED, CANCELLED or STALE\n"},
		{"approvals show", clientAcme, []string{"approvals", "show", "{A}"}, 0,
			"approval   {A}\nstatus     PENDING\nsession    {S}\ntask       t1\nnode       t1.n1\ntool       create_site\n" +
				"arguments  网站标题: Spring Launch; 空间: 42\ndigest     e31bd6944a53a33ef758d4f63057b6fca367bc3e5013330a721fb4b85a4a10af\n" +
				"question   在市场部空间创建网站 Spring Launch ⏎ 网站标题：Spring Launch ⏎ 空间：42\ncreated    2026-12-01T09:30:00Z\n", ""},
		{"another tenant's session", clientGlobex, []string{"sessions", "show", "{S}"}, 1, "", "warden: session_not_found: no such session\n"},
		{"another tenant's approval", clientGlobex, []string{"approvals", "confirm", "{A}"}, 1, "", "warden: approval_not_found: no such approval\n"},
		{"another tenant's approvals", clientGlobex, []string{"approvals", "list"}, 0, "no approvals\n", ""},
		{"confirm", clientAcme, []string{"approvals", "confirm", "{A}"}, 0, "task t1 DONE\noutput  网站 Spring Launch 已创建\n", ""},
		{"confirm again", clientAcme, []string{"approvals", "confirm", "{A}"}, 1,
			"", "warden: approval_used: this approval was already answered (CONFIRM)\n"},
		{"approvals list, confirmed", clientAcme, []string{"approvals", "list", "--status", "CONFIRMED"}, 0,
			"APPROVAL                             STATUS   SESSION                             TASK  TOOL         CREATED               QUESTION\n" +
				"{A}  CONFIRM  {S}  t1    create_site  2026-12-01T09:30:00Z  在市场部空间创建网站 Spring Launch ⏎ 网站标题：Spring Launch ⏎ 空间：42\n", ""},
		{"the task done", clientAcme, []string{"tasks", "show", "{S}", "t1"}, 0, "task t1 DONE\noutput  网站 Spring Launch 已创建\n", ""},
		{"unknown task", clientAcme, []string{"tasks", "show", "{S}", "t9"}, 1, "", "warden: task_not_found: no such task\n"},
		{"unknown task's trace", clientAcme, []string{"tasks", "trace", "{S}", "t9"}, 1, "", "warden: task_not_found: no such task\n"},
		{"unknown task watched", clientAcme, []string{"tasks", "watch", "{S}", "t9"}, 1, "", "warden: task_not_found: no such task\n"},
		{"unknown session", clientAcme, []string{"sessions", "send", "s_nope", "hi"}, 1, "", "warden: session_not_found: no such session\n"},
		{"unknown approval", clientAcme, []string{"approvals", "show", "ap_nope"}, 1, "", "warden: approval_not_found: no such approval\n"},
		{"bad cursor", clientAcme, []string{"sessions", "list", "--after", "nope"}, 1, "", "warden: invalid_request: after is not a cursor this API gave\n"},
	})

	// The rest of the confirmed task's trace, as watch shows a task done.
	code, stdout, stderr = f.cli(clientAcme, "tasks", "watch", vars["S"], "t1")
	wantTail := "#8 RESUME  [t1.n1] create_site stalls=0 APPROVAL: CONFIRM\n"
	if code != 0 || stderr != "" || !strings.HasPrefix(stdout, approvalTrace+wantTail) ||
		!strings.HasSuffix(stdout, "TASK    stalls=0 DONE: 网站 Spring Launch 已创建\ntask t1 DONE\noutput  网站 Spring Launch 已创建\n") {
		t.Fatalf("watch of the done task = %d\n%s\n%s", code, stdout, stderr)
	}

	// --json prints each answer as the API sent it.
	for _, c := range []struct{ args, path string }{
		{"sessions list", "/v1/sessions"},
		{"sessions show {S}", "/v1/sessions/{S}"},
		{"tasks show {S} t1", "/v1/sessions/{S}/tasks/t1"},
		{"tasks trace {S} t1", "/v1/sessions/{S}/tasks/t1/trace"},
		{"approvals list", "/v1/approvals"},
		{"approvals list --status CONFIRMED", "/v1/approvals?status=CONFIRMED"},
		{"approvals show {A}", "/v1/approvals/{A}"},
	} {
		args := strings.Fields(expand(c.args, vars))
		got := f.must(clientAcme, append(args, "--json")...)
		if want := strings.TrimSuffix(f.raw(clientAcme, expand(c.path, vars)), "\n") + "\n"; got != want {
			t.Errorf("warden %s --json =\n%s\nwant the API's answer\n%s", c.args, got, want)
		}
	}
	// A second session: the first page of one ends with the next page's
	// cursor.
	s2 := f.newSession(clientAcme)
	var page struct{ Next string }
	if err := json.Unmarshal([]byte(f.raw(clientAcme, "/v1/sessions?limit=1")), &page); err != nil || page.Next == "" {
		t.Fatalf("no next page: %v %+v", err, page)
	}
	first, second := vars["S"], s2
	if s2 > vars["S"] {
		// The same creation time: the greater id is the newer.
		first, second = s2, vars["S"]
	}
	if got, want := f.must(clientAcme, "sessions", "list", "--limit", "1"),
		"SESSION                             CREATED\n"+first+"  2026-12-01T09:30:00Z\nmore: warden sessions list --after "+page.Next+"\n"; got != want {
		t.Errorf("sessions list --limit 1 =\n%s\nwant\n%s", got, want)
	}
	var page2 struct{ Next string }
	if err := json.Unmarshal([]byte(f.raw(clientAcme, "/v1/sessions?limit=1&after="+page.Next)), &page2); err != nil {
		t.Fatal(err)
	}
	more := ""
	if page2.Next != "" {
		more = "more: warden sessions list --after " + page2.Next + "\n"
	}
	if got, want := f.must(clientAcme, "sessions", "list", "--limit", "1", "--after", page.Next),
		"SESSION                             CREATED\n"+second+"  2026-12-01T09:30:00Z\n"+more; got != want {
		t.Errorf("sessions list --after =\n%s\nwant\n%s", got, want)
	}
}

// TestClientFollowUpAndVerify answers a follow-up question and a write's
// verification through the client, and rejects a held write.
func TestClientFollowUpAndVerify(t *testing.T) {
	t.Parallel()
	t.Run("follow-up, then reject", func(t *testing.T) {
		t.Parallel()
		f := newClientFixture(t, followUpFile, 0)
		vars := map[string]string{"S": f.newSession(clientAcme)}
		runSteps(t, f, vars, []clientStep{
			{"follow-up before the question", clientAcme, []string{"tasks", "follow-up", "{S}", "t1", "x"}, 1, "", "warden: task_not_found: no such task\n"},
			{"send asks a question", clientAcme, []string{"sessions", "send", "{S}", "帮我在市场部空间建一个网站"}, 0,
				"task t1 SUSPENDED at node t1.n1\nwaits for  FOLLOW_UP\nquestion   网站标题用什么？\nexpects    title\n" +
					"answer     warden tasks follow-up {S} t1 ANSWER\n", ""},
			{"verify is not what it waits for", clientAcme, []string{"tasks", "verify", "{S}", "t1"}, 1, "", "warden: not_suspended: task t1 does not wait for VERIFY\n"},
			{"the answer", clientAcme, []string{"tasks", "follow-up", "{S}", "t1", "就叫", "Autumn Sale 吧"}, 0,
				"task t1 SUSPENDED at node t1.n1\nwaits for  APPROVAL\nquestion   创建网站 Autumn Sale ⏎ 网站标题：Autumn Sale ⏎ 空间：42\n" +
					"approval   {A}\ntool       create_site\narguments  网站标题: Autumn Sale; 空间: 42\n" +
					"answer     warden approvals confirm|reject|cancel {A}\n", ""},
			{"reject", clientAcme, []string{"approvals", "reject", "{A}", "--wait", "1m"}, 0,
				"task t1 CANCELLED\nreason  用户拒绝了确认，未执行写操作 create_site。创建网站 Autumn Sale ⏎ 网站标题：Autumn Sale ⏎ 空间：42\n", ""},
			{"rejected", clientAcme, []string{"approvals", "list", "--status", "rejected"}, 0,
				"APPROVAL                             STATUS  SESSION                             TASK  TOOL         CREATED               QUESTION\n" +
					"{A}  REJECT  {S}  t1    create_site  2026-12-01T09:30:00Z  创建网站 Autumn Sale ⏎ 网站标题：Autumn Sale ⏎ 空间：42\n", ""},
			{"answered", clientAcme, []string{"approvals", "show", "{A}"}, 0,
				"approval   {A}\nstatus     REJECT\nsession    {S}\ntask       t1\nnode       t1.n1\ntool       create_site\n" +
					"arguments  网站标题: Autumn Sale; 空间: 42\ndigest     285c2d75335b1c2c080660b61ad194764874787aff87a511a0f18e7d5d70f0bc\n" +
					"question   创建网站 Autumn Sale ⏎ 网站标题：Autumn Sale ⏎ 空间：42\ncreated    2026-12-01T09:30:00Z\nanswered   2026-12-01T09:30:00Z\n", ""},
			{"cancel an answered approval", clientAcme, []string{"approvals", "cancel", "{A}"}, 1,
				"", "warden: approval_used: this approval was already answered (REJECT)\n"},
			{"follow-up of an ended task", clientAcme, []string{"tasks", "follow-up", "{S}", "t1", "again"}, 1,
				"", "warden: not_suspended: task t1 does not wait for FOLLOW_UP\n"},
		})
	})
	t.Run("verify", func(t *testing.T) {
		t.Parallel()
		f := newClientFixture(t, verifyFile, 0)
		vars := map[string]string{"S": f.newSession(clientAcme)}
		runSteps(t, f, vars, []clientStep{
			{"send", clientAcme, []string{"sessions", "send", "{S}", askSite}, 0, approvalWait, ""},
			{"confirm: the write times out", clientAcme, []string{"approvals", "confirm", "{A}"}, 0,
				"task t1 SUSPENDED at node t1.n1\nwaits for  VERIFY\n" +
					"question   写操作 create_site 的结果不确定（调用超时或中断），请确认它是否已生效？参数：{\"title\":\"Spring Launch\",\"spaceId\":42}\n" +
					"tool       create_site\nanswer     warden tasks verify {S} t1 [--took yes|no]\n", ""},
			{"resume of a waiting task", clientAcme, []string{"tasks", "resume", "{S}", "t1"}, 1,
				"", "warden: not_interrupted: task t1 was not interrupted (SUSPENDED)\n"},
			{"it took effect", clientAcme, []string{"tasks", "verify", "--took", "yes", "{S}", "t1"}, 0,
				"task t1 DONE\noutput  网站 Spring Launch 已创建\n", ""},
			{"verify again", clientAcme, []string{"tasks", "verify", "{S}", "t1", "--took", "no"}, 1,
				"", "warden: not_suspended: task t1 does not wait for VERIFY\n"},
			{"resume of a done task", clientAcme, []string{"tasks", "resume", "{S}", "t1", "--wait", "30s"}, 1,
				"", "warden: not_interrupted: task t1 was not interrupted (DONE)\n"},
		})
	})
}

// TestClientAsync posts a message without waiting, or waiting less than
// the run takes, and follows the run with watch until it waits for the
// approval.
func TestClientAsync(t *testing.T) {
	t.Parallel()
	// The space lookup takes a second: the run is still going when the
	// answers come.
	f := newClientFixture(t, approvalFile, time.Second)
	for _, args := range [][]string{{"sessions", "send", "--no-wait"}, {"sessions", "send", "--wait", "10ms"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			s := f.newSession(clientAcme)
			vars := map[string]string{"S": s}
			runSteps(t, f, vars, []clientStep{
				{"send", clientAcme, append(args, "{S}", askSite), 0, "task t1 RUNNING\nfollow  warden tasks watch {S} t1\n", ""},
				{"watch until it waits", clientAcme, []string{"tasks", "watch", "{S}", "t1"}, 0, approvalTrace + approvalWait, ""},
			})
			// --json: one event a line, as the stream sent them.
			out := f.must(clientAcme, "tasks", "watch", s, "t1", "--json")
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != 7 {
				t.Fatalf("watch --json printed %d lines:\n%s", len(lines), out)
			}
			for i, l := range lines {
				var e struct {
					Seq  int64  `json:"seq"`
					Task string `json:"task"`
					Kind string `json:"kind"`
				}
				if err := json.Unmarshal([]byte(l), &e); err != nil || e.Seq != int64(i+1) || e.Task != "t1" {
					t.Errorf("line %d %q: %v %+v", i, l, err, e)
				}
			}
		})
	}
	t.Run("--json", func(t *testing.T) {
		t.Parallel()
		var s struct {
			ID    string `json:"id"`
			Tasks []any  `json:"tasks"`
		}
		out := f.must(clientAcme, "sessions", "new", "--json")
		if err := json.Unmarshal([]byte(out), &s); err != nil || !strings.HasPrefix(s.ID, "s_") || s.Tasks == nil || strings.Count(out, "\n") != 1 {
			t.Fatalf("sessions new --json = %q: %v", out, err)
		}
		var res struct {
			Task struct {
				ID, Status string
			} `json:"task"`
			Events []any `json:"events"`
		}
		out = f.must(clientAcme, "sessions", "send", "--no-wait", "--json", s.ID, askSite)
		if err := json.Unmarshal([]byte(out), &res); err != nil || res.Task.ID != "t1" || res.Task.Status != "RUNNING" || strings.Count(out, "\n") != 1 {
			t.Fatalf("sessions send --no-wait --json = %q: %v", out, err)
		}
	})
}

// cutBody ends a response after n bytes, as a dropped connection would.
type cutBody struct {
	r io.ReadCloser
	n int
}

func (b *cutBody) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, io.EOF
	}
	if len(p) > b.n {
		p = p[:b.n]
	}
	n, err := b.r.Read(p)
	b.n -= n
	return n, err
}

func (b *cutBody) Close() error { return b.r.Close() }

// TestClientWatchDrops: watch follows a stream that drops in the middle of
// an event from where it stopped, and prints every event once.
func TestClientWatchDrops(t *testing.T) {
	t.Parallel()
	f := newClientFixture(t, approvalFile, 2*time.Second)
	up, err := url.Parse(f.url)
	if err != nil {
		t.Fatal(err)
	}
	var streams atomic.Int32
	proxy := httputil.NewSingleHostReverseProxy(up)
	proxy.FlushInterval = -1
	proxy.ModifyResponse = func(resp *http.Response) error {
		if strings.HasSuffix(resp.Request.URL.Path, "/events") && streams.Add(1) == 1 {
			// The preamble, then part of the first event.
			resp.Body = &cutBody{r: resp.Body, n: len(": warden events\n\n") + 20}
		}
		return nil
	}
	ps := httptest.NewServer(proxy)
	t.Cleanup(ps.Close)
	s := f.newSession(clientAcme)
	f.must(clientAcme, "sessions", "send", "--no-wait", s, askSite)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"tasks", "watch", s, "t1", "--server", ps.URL, "--key", clientAcme}, &stdout, &stderr)
	var ap struct{ Tasks []struct{ Approval string } }
	if err := json.Unmarshal([]byte(f.raw(clientAcme, "/v1/sessions/"+s)), &ap); err != nil || len(ap.Tasks) != 1 {
		t.Fatalf("session: %v %+v", err, ap)
	}
	if want := expand(approvalTrace+approvalWait, map[string]string{"A": ap.Tasks[0].Approval}); code != 0 || stdout.String() != want || stderr.Len() > 0 {
		t.Fatalf("watch through a dropping stream = %d\n%s\n%s\nwant\n%s", code, stdout.String(), stderr.String(), want)
	}
	t.Logf("%d event streams opened", streams.Load())
}
