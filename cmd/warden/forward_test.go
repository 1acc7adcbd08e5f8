package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/store/sqlstore"
	"github.com/agentwarden/warden/internal/store/sqlstore/sqltest"
)

// rawCall sends one API request and returns the answer as it came.
func rawCall(t *testing.T, base, method, path, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tenantKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// sseEvents reads a session's event stream from base until the event with
// id last, and returns its events (id, event and data lines; comments and
// keep-alives left out).
func sseEvents(ctx context.Context, base, session string, last int) (string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/v1/sessions/"+session+"/events?after=0", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+tenantKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		return "", &streamError{resp.StatusCode, string(b)}
	}
	var out strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	seen := -1
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, ":") {
			if line == "" && seen >= last {
				return out.String(), nil
			}
			continue
		}
		out.WriteString(line + "\n")
		if id, ok := strings.CutPrefix(line, "id: "); ok {
			seen, _ = strconv.Atoi(id)
		}
	}
	return out.String(), sc.Err()
}

type streamError struct {
	code int
	body string
}

func (e *streamError) Error() string { return strconv.Itoa(e.code) + " " + e.body }

// TestServeForwarding is issue 26's bar: two warden serve processes on one
// PostgreSQL behind what a round-robin balancer does — every request of a
// whole task (create, message, approval, confirm, task, trace, the event
// stream) goes to a and b in turn — and no answer is 409: b forwards what a
// serves and relays a's answer, the same bytes a gives. Then a is killed
// (SIGKILL): b answers 503 owner_unreachable with a Retry-After within the
// lease, and once that has passed takes the session over and runs its next
// task, the earlier one intact.
func TestServeForwarding(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs warden and the example MCP server")
	}
	dsn := sqltest.DSN(t, sqlstore.Postgres) // skips without a PostgreSQL
	warden := buildBin(t, "warden", ".")
	cmsBin := buildBin(t, "mcp-cms", "../../examples/mcp-cms")
	_, mcpURL := start(t, regexp.MustCompile(`listening on (http://\S+)`), cmsBin, "-http", "127.0.0.1:0")
	skills, keys := killFixture(t)
	dir := t.TempDir()
	// The scripted model of a session starts at its script's first turn on
	// the instance that opens the session: a plays the first task, b the
	// second, after taking the session over.
	scriptA := filepath.Join(dir, "a.json")
	writeFile(t, scriptA, `[
		{"tool_calls":[{"name":"create_website","arguments":{"spaceId":"sp-1","name":"Shop","domain":"shop.example.com"}}]},
		{"expect":{"tool":"create_website","code":"APPROVAL_REQUIRED"},"tool_calls":[{"name":"builtin_node_approval","arguments":{"summary":"create shop.example.com","toolName":"create_website"}}]},
		{"expect":{"tool":"create_website","outcome":"SUCCESS"},"tool_calls":[{"name":"builtin_node_finish","arguments":{"output":"shop.example.com created"}}]}]`)
	scriptB := filepath.Join(dir, "b.json")
	writeFile(t, scriptB, `[
		{"tool_calls":[{"name":"find_website","arguments":{"domain":"shop.example.com"}}]},
		{"expect":{"tool":"find_website","outcome":"SUCCESS"},"tool_calls":[{"name":"builtin_node_finish","arguments":{"output":"the site is called Shop"}}]}]`)
	serving := regexp.MustCompile(`serving on (http://\S+)`)
	env := []string{"WARDEN_FORWARD_SECRET=" + strings.Repeat("s3cret-", 6)}
	args := func(name, script string) []string {
		return []string{"serve", "--addr", "127.0.0.1:0", "--skills", skills, "--keys", keys, "--store", "postgres:" + dsn,
			"--instance", name, "--lease", "2s", "--model", "scripted", "--model-script", script, "--tools", "mcp-url", "--mcp-url", mcpURL}
	}
	a, baseA := startEnv(t, env, serving, warden, args("warden-a", scriptA)...)
	b, baseB := startEnv(t, env, serving, warden, args("warden-b", scriptB)...)

	var sess struct{ ID string }
	if code := apiCall(t, baseA, "POST", "/v1/sessions", tenantKey, "", &sess); code != 201 {
		t.Fatalf("create session on a: %d", code)
	}
	// The event stream through b, open before anything runs: a's events
	// reach it as a sends them.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type streamed struct {
		events string
		err    error
	}
	viaB := make(chan streamed, 1)
	lastSeq := make(chan int, 1)
	go func() {
		last := <-lastSeq
		ev, err := sseEvents(ctx, baseB, sess.ID, last)
		viaB <- streamed{ev, err}
	}()

	var res struct {
		Task struct {
			ID, Status string
		}
		Approval struct{ ID string }
	}
	// message → b (forwarded to a, which runs it)
	if code := apiCall(t, baseB, "POST", "/v1/sessions/"+sess.ID+"/messages?wait=5m", tenantKey, `{"text":"create the website Shop with domain shop.example.com in space sp-1"}`, &res); code != 200 ||
		res.Task.Status != "SUSPENDED" || res.Approval.ID == "" {
		t.Fatalf("message on b: %d %+v\n%s\n%s", code, res, a.out.String(), b.out.String())
	}
	// the approval → a, then b: the same answer.
	codeA, _, approvalA := rawCall(t, baseA, "GET", "/v1/approvals/"+res.Approval.ID, "")
	codeB, _, approvalB := rawCall(t, baseB, "GET", "/v1/approvals/"+res.Approval.ID, "")
	if codeA != 200 || codeB != 200 || approvalA != approvalB {
		t.Fatalf("approval on a and b:\n%d %s\n%d %s", codeA, approvalA, codeB, approvalB)
	}
	// confirm → b (forwarded); a runs the write.
	var done struct {
		Task struct{ Status, Output string }
	}
	if code := apiCall(t, baseB, "POST", "/v1/approvals/"+res.Approval.ID, tenantKey, `{"decision":"CONFIRM"}`, &done); code != 200 ||
		done.Task.Status != "DONE" || done.Task.Output != "shop.example.com created" {
		t.Fatalf("CONFIRM on b: %d %+v\n%s", code, done, b.out.String())
	}
	// The task, its trace and the session, from a and from b: the same
	// status, headers that matter and bytes.
	task := "/v1/sessions/" + sess.ID + "/tasks/" + res.Task.ID
	for _, path := range []string{task, task + "/trace", "/v1/sessions/" + sess.ID} {
		codeA, hA, bodyA := rawCall(t, baseA, "GET", path, "")
		codeB, hB, bodyB := rawCall(t, baseB, "GET", path, "")
		if codeA != 200 || codeA != codeB || bodyA != bodyB || hA.Get("Content-Type") != hB.Get("Content-Type") {
			t.Fatalf("GET %s on a and b:\n%d %s\n%d %s", path, codeA, bodyA, codeB, bodyB)
		}
	}
	// A second answer to the used approval, through b: a's 409, relayed.
	codeB, _, used := rawCall(t, baseB, "POST", "/v1/approvals/"+res.Approval.ID, `{"decision":"CONFIRM"}`)
	if codeB != 409 || !strings.Contains(used, `"approval_used"`) {
		t.Fatalf("second CONFIRM on b: %d %s", codeB, used)
	}
	var trace struct {
		Events []struct{ Seq int } `json:"events"`
	}
	if code := apiCall(t, baseA, "GET", task+"/trace", tenantKey, "", &trace); code != 200 || len(trace.Events) == 0 {
		t.Fatalf("trace on a: %d %+v", code, trace)
	}
	last := trace.Events[len(trace.Events)-1].Seq
	lastSeq <- last
	direct, err := sseEvents(ctx, baseA, sess.ID, last)
	if err != nil {
		t.Fatalf("stream on a: %v", err)
	}
	got := <-viaB
	if got.err != nil || got.events != direct || !strings.Contains(direct, "id: "+strconv.Itoa(last)+"\n") {
		t.Fatalf("stream through b %v:\n%s\nstream on a:\n%s", got.err, got.events, direct)
	}
	// b's metrics count the hops to a.
	req, _ := http.NewRequest("GET", baseB+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	mres, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(mres.Body)
	mres.Body.Close()
	if !regexp.MustCompile(`warden_forwarded_requests_total\{from="warden-b",outcome="relayed",to="warden-a"\} ([5-9]|\d\d)`).Match(metrics) {
		t.Fatalf("b's metrics:\n%s", grepLines(string(metrics), "warden_forward"))
	}

	// a dies without releasing its lease.
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.done
	msg := `{"text":"what is the site at shop.example.com called?"}`
	code, h, body := rawCall(t, baseB, "POST", "/v1/sessions/"+sess.ID+"/messages?wait=5m", msg)
	if code == 503 {
		// Until a's lease runs out: never 409, and a Retry-After within it.
		wait, err := strconv.Atoi(h.Get("Retry-After"))
		if !strings.Contains(body, `"owner_unreachable"`) || err != nil || wait < 1 || wait > 2 {
			t.Fatalf("message on b while a's lease runs: %d %v %s", code, h, body)
		}
		time.Sleep(time.Duration(wait) * time.Second)
		code, _, body = rawCall(t, baseB, "POST", "/v1/sessions/"+sess.ID+"/messages?wait=5m", msg)
	}
	if code != 200 || !strings.Contains(body, `"the site is called Shop"`) {
		t.Fatalf("message on b after a died: %d %s\n%s", code, body, b.out.String())
	}
	if !b.shows(`"msg":"session taken over"`) {
		t.Fatalf("b did not log the take-over:\n%s", b.out.String())
	}
	// The first task is intact, now served by b.
	code, _, body = rawCall(t, baseB, "GET", task, "")
	if code != 200 || !strings.Contains(body, `"shop.example.com created"`) {
		t.Fatalf("first task on b: %d %s", code, body)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
