package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/feedback"
	"github.com/agentwarden/warden/internal/server"
)

// approvalPage is GET /v1/approvals' answer.
type approvalPage struct {
	Approvals []server.Approval `json:"approvals"`
	Next      string            `json:"next"`
}

func ids(as []server.Approval) []string {
	out := []string{}
	for _, a := range as {
		out = append(out, a.ID)
	}
	return out
}

func TestListApprovals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var held []string // oldest first
	for range 3 {
		_, res := f.suspend(t)
		held = append(held, res.Approval.ID)
		// Approvals are stamped to the millisecond: keep their order plain.
		time.Sleep(5 * time.Millisecond)
	}
	// Another tenant's approval never shows.
	gs := f.session(t, keyGlobex)
	var foreign server.RunResult
	if code, eb := f.do(t, "POST", "/v1/sessions/"+gs+"/messages?wait=5m", keyGlobex, springLaunch, &foreign); code != http.StatusOK || foreign.Approval == nil {
		t.Fatalf("globex message: %d %+v", code, eb)
	}
	newest := slices.Clone(held)
	slices.Reverse(newest)
	var done server.RunResult
	if code, eb := f.do(t, "POST", "/v1/approvals/"+held[0]+"?wait=5m", keyAcme, `{"decision":"CONFIRM"}`, &done); code != http.StatusOK {
		t.Fatalf("CONFIRM: %d %+v", code, eb)
	}

	tests := []struct {
		name, query, key string
		want             []string
		next             bool
	}{
		{"all, newest first", "", keyAcme, newest, false},
		{"pending", "?status=PENDING", keyAcme, newest[:2], false},
		{"confirmed", "?status=CONFIRMED", keyAcme, held[:1], false},
		{"confirmed as stored", "?status=CONFIRM", keyAcme, held[:1], false},
		{"rejected", "?status=REJECTED", keyAcme, []string{}, false},
		{"first page", "?limit=2", keyAcme, newest[:2], true},
		{"another tenant sees its own", "", keyGlobex, []string{foreign.Approval.ID}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var page approvalPage
			if code, eb := f.do(t, "GET", "/v1/approvals"+tt.query, tt.key, "", &page); code != http.StatusOK {
				t.Fatalf("%d %+v", code, eb)
			}
			if got := ids(page.Approvals); !slices.Equal(got, tt.want) {
				t.Fatalf("approvals %v, want %v", got, tt.want)
			}
			if (page.Next != "") != tt.next {
				t.Fatalf("next = %q", page.Next)
			}
		})
	}

	// Paging walks every approval once, in order.
	var walked []string
	path := "/v1/approvals?limit=1"
	for range 5 {
		var page approvalPage
		if code, eb := f.do(t, "GET", path, keyAcme, "", &page); code != http.StatusOK {
			t.Fatalf("%s: %d %+v", path, code, eb)
		}
		walked = append(walked, ids(page.Approvals)...)
		if page.Next == "" {
			break
		}
		path = "/v1/approvals?limit=1&after=" + page.Next
	}
	if !slices.Equal(walked, newest) {
		t.Fatalf("paged %v, want %v", walked, newest)
	}

	bad := []struct {
		name, query string
		code, msg   string
	}{
		{"unknown status", "?status=DONE", server.CodeInvalidRequest, "status must be PENDING, CONFIRMED, REJECTED, CANCELLED or STALE"},
		{"bad limit", "?limit=0", server.CodeInvalidRequest, "limit must be a whole number from 1 to 200"},
		{"bad cursor", "?after=nope", server.CodeInvalidRequest, "after is not a cursor this API gave"},
		{"unknown parameter", "?tool=x", server.CodeUnknownField, "unknown query parameter tool"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			code, eb := f.do(t, "GET", "/v1/approvals"+tt.query, keyAcme, "", nil)
			if code != http.StatusBadRequest || eb.Error.Code != tt.code || eb.Error.Message != tt.msg {
				t.Fatalf("got %d %+v, want 400 %s %q", code, eb, tt.code, tt.msg)
			}
		})
	}
}

func TestApprovalArgsSummary(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		contract func(string) string
		want     []server.ArgLine
	}{
		{"labels", nil, []server.ArgLine{{Label: "网站标题", Value: "Spring Launch"}, {Label: "空间", Value: "42"}}},
		{"sensitive title masked", func(c string) string {
			return strings.Replace(c, `"label":"网站标题"`, `"label":"网站标题","sensitive":true`, 1)
		}, []server.ArgLine{{Label: "网站标题", Value: "Spr****unch"}, {Label: "空间", Value: "42"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := buildFixture(t, fixtureSetup{contract: tt.contract})
			_, res := f.suspend(t)
			var got server.Approval
			if code, eb := f.do(t, "GET", "/v1/approvals/"+res.Approval.ID, keyAcme, "", &got); code != http.StatusOK {
				t.Fatalf("%d %+v", code, eb)
			}
			if !slices.Equal(got.ArgsSummary, tt.want) || !slices.Equal(res.Approval.ArgsSummary, tt.want) {
				t.Fatalf("args_summary %+v (as held %+v), want %+v", got.ArgsSummary, res.Approval.ArgsSummary, tt.want)
			}
			// A sensitive value shows in no answer about the task: not in
			// the approval's or the suspension's args, nor in the trace.
			sid := res.Approval.Session
			for _, path := range []string{"/v1/approvals/" + res.Approval.ID, "/v1/approvals?status=PENDING", "/v1/sessions/" + sid,
				"/v1/sessions/" + sid + "/tasks/t1", "/v1/sessions/" + sid + "/tasks/t1/trace"} {
				var raw json.RawMessage
				if code, eb := f.do(t, "GET", path, keyAcme, "", &raw); code != http.StatusOK {
					t.Fatalf("%s: %d %+v", path, code, eb)
				}
				if shown := strings.Contains(string(raw), "Spring Launch"); shown != (tt.contract == nil) {
					t.Fatalf("%s: Spring Launch shown %v: %s", path, shown, raw)
				}
			}
			if tt.contract != nil && !strings.Contains(string(got.Args), `"Spr****unch"`) {
				t.Fatalf("args %s: the sensitive value is not masked", got.Args)
			}
		})
	}
}

func TestListInstances(t *testing.T) {
	t.Parallel()
	type listing struct {
		Instances []server.Instance `json:"instances"`
	}
	until := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name      string
		instances func(context.Context) ([]server.Instance, error)
		want      []server.Instance
		status    int
		code      string
	}{
		{"this instance alone", nil, []server.Instance{{ID: "local", Sessions: 1, Self: true}}, 200, ""},
		{"from the directory", func(context.Context) ([]server.Instance, error) {
			return []server.Instance{{ID: "b", LeaseUntil: &until, Sessions: 2}, {ID: "local", LeaseUntil: &until, Sessions: 1}}, nil
		}, []server.Instance{{ID: "b", LeaseUntil: &until, Sessions: 2}, {ID: "local", LeaseUntil: &until, Sessions: 1, Self: true}}, 200, ""},
		{"directory failed", func(context.Context) ([]server.Instance, error) {
			return nil, errors.New("down")
		}, nil, 500, server.CodeInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := buildFixture(t, fixtureSetup{options: func(o *server.Options) { o.Instances = tt.instances }})
			f.session(t, keyAcme)
			var got listing
			code, eb := f.do(t, "GET", "/admin/v1/instances", keyAdmin, "", &got)
			if code != tt.status || eb.Error.Code != tt.code {
				t.Fatalf("got %d %+v, want %d %s", code, eb, tt.status, tt.code)
			}
			if tt.status != 200 {
				return
			}
			if len(got.Instances) != len(tt.want) {
				t.Fatalf("instances %+v, want %+v", got.Instances, tt.want)
			}
			for i, in := range got.Instances {
				w := tt.want[i]
				if in.ID != w.ID || in.Sessions != w.Sessions || in.Self != w.Self || (in.LeaseUntil == nil) != (w.LeaseUntil == nil) ||
					(w.LeaseUntil != nil && !in.LeaseUntil.Equal(*w.LeaseUntil)) {
					t.Fatalf("instance %d = %+v, want %+v", i, in, w)
				}
				// The answering process shows its plugin instances: the
				// fixture's session made none busy, and its host has no
				// budget.
				if p := in.Plugins; (p != nil) != in.Self || (p != nil && (p.Live < 0 || p.Idle > p.Live || p.Peak < p.Live || p.MaxInstances != 0)) {
					t.Fatalf("instance %d plugin instances = %+v", i, p)
				}
			}
		})
	}
	f := newFixture(t)
	if code, eb := f.do(t, "GET", "/admin/v1/instances", keyAcme, "", nil); code != http.StatusForbidden || eb.Error.Code != server.CodeForbidden {
		t.Fatalf("tenant key: %d %+v", code, eb)
	}
}

// feedbackRecords is a FeedbackSource over fixed records that keeps the
// filters it was asked with.
type feedbackRecords struct {
	mu      sync.Mutex
	records []feedback.Record
	asked   []feedback.Filter
}

func (fr *feedbackRecords) Feedback(_ context.Context, f feedback.Filter) ([]feedback.Record, error) {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	fr.asked = append(fr.asked, f)
	var out []feedback.Record
	for _, r := range fr.records {
		if f.Match(r) {
			out = append(out, r)
		}
	}
	return out, nil
}

func TestFeedbackTools(t *testing.T) {
	t.Parallel()
	off := newFixture(t)
	if code, eb := off.do(t, "GET", "/v1/feedback/tools", keyAcme, "", nil); code != http.StatusNotFound ||
		eb.Error.Code != server.CodeFeedbackOff || eb.Error.Message != "no feedback store is configured" {
		t.Fatalf("without a store: %d %+v", code, eb)
	}

	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	src := &feedbackRecords{records: []feedback.Record{
		{Time: at, Tenant: "acme", Tool: "create_site", Outcome: "SUCCESS"},
		{Time: at, Tenant: "acme", Tool: "create_site", Outcome: "FAILED", Code: "E1", Name: "TOOL_ERROR", Category: "business", StallsAdded: 1},
		{Time: at.Add(time.Hour), Tenant: "acme", Tool: "query_space", Outcome: "SUCCESS"},
		{Time: at, Tenant: "globex", Tool: "create_site", Outcome: "FAILED"},
	}}
	f := buildFixture(t, fixtureSetup{options: func(o *server.Options) { o.Feedback = src }})
	tests := []struct {
		name, query string
		records     int
		tools       []string
	}{
		{"the tenant's records", "", 3, []string{"create_site", "query_space"}},
		{"one tool", "?tool=query_space", 1, []string{"query_space"}},
		{"since", "?since=2026-03-01T00:30:00Z", 1, []string{"query_space"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rep feedback.Report
			if code, eb := f.do(t, "GET", "/v1/feedback/tools"+tt.query, keyAcme, "", &rep); code != http.StatusOK {
				t.Fatalf("%d %+v", code, eb)
			}
			var names []string
			for _, r := range rep.Tools {
				names = append(names, r.Name)
			}
			if rep.Records != tt.records || !slices.Equal(names, tt.tools) {
				t.Fatalf("report %+v, want %d records of %v", rep, tt.records, tt.tools)
			}
		})
	}
	var rep feedback.Report
	f.do(t, "GET", "/v1/feedback/tools", keyAcme, "", &rep)
	if want := feedback.Summarize(src.records[:3]); rep.Tools[0].Failures != 1 || rep.Tools[0].Stalls != 1 ||
		rep.Tools[0].ByCode[0].Name != want.Tools[0].ByCode[0].Name || len(rep.Categories) != 1 {
		t.Fatalf("report %+v, want %+v", rep, want)
	}
	for _, tt := range []struct{ name, query, code, msg string }{
		{"bad since", "?since=yesterday", server.CodeInvalidRequest, "since must be an RFC 3339 time"},
		{"unknown parameter", "?tenant=globex", server.CodeUnknownField, "unknown query parameter tenant"},
	} {
		code, eb := f.do(t, "GET", "/v1/feedback/tools"+tt.query, keyAcme, "", nil)
		if code != http.StatusBadRequest || eb.Error.Code != tt.code || eb.Error.Message != tt.msg {
			t.Fatalf("%s: %d %+v", tt.name, code, eb)
		}
	}
}
