package storetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/store"
)

// testSessionStates: the store lists sessions with their latest task's
// status, count and last event time, filtered by status, tenant and
// creation time, in pages.
func testSessionStates(t *testing.T, d store.Directory) {
	ls, ok := d.(store.SessionStates)
	if !ok {
		t.Fatalf("%T does not list session states", d)
	}
	at := func(ms int) time.Time { return Clock.Add(time.Duration(ms) * time.Millisecond) }
	task := func(session, id string, seq int64, status string) {
		must(t, d.PutTask(bg, session, store.Doc{ID: id, Seq: seq, Doc: json.RawMessage(fmt.Sprintf(`{"id":%q,"status":%q}`, id, status))}))
	}
	for _, s := range []store.Session{
		{ID: "s_done", Tenant: "acme", Created: at(1), Owner: "i1"},
		{ID: "s_failed", Tenant: "acme", Created: at(2), Owner: "i1"},
		{ID: "s_waiting", Tenant: "acme", Created: at(3), Owner: "i1"},
		{ID: "s_empty", Tenant: "acme", Created: at(4), Owner: "i1"},
		{ID: "s_other", Tenant: "globex", Created: at(5), Owner: "i1"},
	} {
		must(t, d.CreateSession(bg, s))
	}
	task("s_done", "t1", 1, "FAILED")
	task("s_done", "t2", 2, "DONE")
	task("s_failed", "t2", 2, "FAILED")
	task("s_failed", "t1", 1, "DONE")
	task("s_waiting", "t1", 1, "SUSPENDED")
	task("s_other", "t1", 1, "FAILED")
	must(t, d.AppendEvent(bg, "s_done", store.Doc{Seq: 1, Doc: json.RawMessage(`{"seq":1,"time":"2026-01-02T03:04:05.006Z"}`)}))
	must(t, d.AppendEvent(bg, "s_done", store.Doc{Seq: 2, Doc: json.RawMessage(`{"seq":2,"time":"2026-01-02T03:04:07.008Z"}`)}))

	ids := func(list []store.SessionState) string {
		var out []string
		for _, s := range list {
			out = append(out, fmt.Sprintf("%s:%s/%s/%d", s.ID, s.Latest, s.Status, s.Tasks))
		}
		return strings.Join(out, ",")
	}
	tests := []struct {
		name string
		f    store.SessionFilter
		want string
	}{
		{"every session of the tenant", store.SessionFilter{Tenant: "acme"}, "s_empty:/" + "/0,s_waiting:t1/SUSPENDED/1,s_failed:t2/FAILED/2,s_done:t2/DONE/2"},
		{"failed: the latest task's status only", store.SessionFilter{Tenant: "acme", Status: []string{"FAILED"}}, "s_failed:t2/FAILED/2"},
		{"waiting or done", store.SessionFilter{Tenant: "acme", Status: []string{"SUSPENDED", "DONE"}}, "s_waiting:t1/SUSPENDED/1,s_done:t2/DONE/2"},
		{"no task", store.SessionFilter{Tenant: "acme", Status: []string{store.NoTask}}, "s_empty:/" + "/0"},
		{"since", store.SessionFilter{Tenant: "acme", Since: at(3)}, "s_empty:/" + "/0,s_waiting:t1/SUSPENDED/1"},
		{"every tenant, failed", store.SessionFilter{Status: []string{"FAILED"}}, "s_other:t1/FAILED/1,s_failed:t2/FAILED/2"},
		{"no match", store.SessionFilter{Tenant: "acme", Status: []string{"CANCELLED"}}, ""},
	}
	for _, tt := range tests {
		list, err := ls.SessionStates(bg, tt.f, store.Cursor{}, 10)
		must(t, err)
		if list == nil || ids(list) != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, ids(list), tt.want)
		}
	}
	// Pages neither repeat nor skip a session.
	var got []string
	var after store.Cursor
	for page := 0; page < 5; page++ {
		list, err := ls.SessionStates(bg, store.SessionFilter{Tenant: "acme"}, after, 3)
		must(t, err)
		if len(list) == 0 {
			break
		}
		for _, s := range list {
			got = append(got, s.ID)
		}
		after = store.Cursor{Created: list[len(list)-1].Created, ID: list[len(list)-1].ID}
	}
	if strings.Join(got, ",") != "s_empty,s_waiting,s_failed,s_done" {
		t.Fatalf("pages %v", got)
	}
	list, err := ls.SessionStates(bg, store.SessionFilter{Tenant: "acme", Status: []string{"DONE"}}, store.Cursor{}, 10)
	must(t, err)
	if want := time.Date(2026, 1, 2, 3, 4, 7, 8e6, time.UTC); len(list) != 1 || !list[0].Last.Equal(want) || list[0].Created != at(1) {
		t.Fatalf("s_done: %+v, want last %v, created %v", list, want, at(1))
	}

	// The status follows the writes: the waiting task finishes, an older
	// task written again does not become the latest, and a new task is.
	moves := []struct {
		name        string
		session, id string
		seq         int64
		status      string
		filter      []string
		want        string
	}{
		{"the waiting task fails", "s_waiting", "t1", 1, "FAILED", []string{"FAILED"}, "s_waiting:t1/FAILED/1,s_failed:t2/FAILED/2"},
		{"an older task rewritten stays older", "s_failed", "t1", 1, "SUSPENDED", []string{"SUSPENDED"}, ""},
		{"a new task is the latest", "s_failed", "t3", 3, "RUNNING", []string{"RUNNING"}, "s_failed:t3/RUNNING/3"},
		{"no longer failed", "s_empty", "t1", 1, "DONE", []string{"FAILED"}, "s_waiting:t1/FAILED/1"},
	}
	for _, m := range moves {
		task(m.session, m.id, m.seq, m.status)
		list, err := ls.SessionStates(bg, store.SessionFilter{Tenant: "acme", Status: m.filter}, store.Cursor{}, 10)
		must(t, err)
		if ids(list) != m.want {
			t.Errorf("%s: %q, want %q", m.name, ids(list), m.want)
		}
	}
	must(t, d.AppendEvent(bg, "s_done", store.Doc{Seq: 3, Doc: json.RawMessage(`{"seq":3,"time":"2026-01-02T03:05:00Z"}`)}))
	list, err = ls.SessionStates(bg, store.SessionFilter{Tenant: "acme", Status: []string{"DONE"}}, store.Cursor{}, 10)
	must(t, err)
	if want := time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC); len(list) != 2 || list[1].ID != "s_done" || !list[1].Last.Equal(want) {
		t.Fatalf("after a new event: %+v, want s_done last %v", list, want)
	}
}
