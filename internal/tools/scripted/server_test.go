package scripted_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/tools"
	"github.com/agentwarden/warden/internal/tools/scripted"
)

var _ tools.Provider = (*scripted.Server)(nil)

func cms(faults map[string][]scripted.Fault) *scripted.Server {
	return scripted.New(nil,
		scripted.Tool{Tool: tools.Tool{Name: "create_article"}, Write: true, Handler: scripted.Create("articles", "art", "articleId"), Faults: faults["create_article"]},
		scripted.Tool{Tool: tools.Tool{Name: "get_article"}, Handler: scripted.Get("articles", "articleId"), Faults: faults["get_article"]},
		scripted.Tool{Tool: tools.Tool{Name: "list_articles"}, Handler: scripted.List("articles"), Faults: faults["list_articles"]},
	)
}

func TestFaults(t *testing.T) {
	t.Parallel()
	errFixed := errors.New("fixed")
	cases := []struct {
		name    string
		tool    string
		fault   scripted.Fault
		args    string
		timeout time.Duration
		want    chain.Response
		wantErr error
		errText string
		// list is list_articles' content after the call.
		list string
	}{
		{
			name: "none", tool: "create_article", args: `{"title":"A"}`,
			want: resp(`{"code":200,"data":{"articleId":"art-1","title":"A"},"msg":"ok"}`),
			list: `{"code":200,"data":{"items":[{"articleId":"art-1","title":"A"}],"total":1},"msg":"ok"}`,
		},
		{
			name: "delay", tool: "create_article", args: `{"title":"A"}`, fault: scripted.Fault{Delay: 20 * time.Millisecond},
			want: resp(`{"code":200,"data":{"articleId":"art-1","title":"A"},"msg":"ok"}`),
			list: `{"code":200,"data":{"items":[{"articleId":"art-1","title":"A"}],"total":1},"msg":"ok"}`,
		},
		{
			name: "delay past deadline", tool: "create_article", args: `{"title":"A"}`, fault: scripted.Fault{Delay: time.Hour}, timeout: 20 * time.Millisecond,
			wantErr: chain.ErrTimeout, errText: "scripted: call create_article (attempt 1): tool timed out: context deadline exceeded",
			list: `{"code":200,"data":{"items":[],"total":0},"msg":"ok"}`,
		},
		{
			name: "timeout", tool: "get_article", args: `{"articleId":"art-1"}`, fault: scripted.Fault{Kind: scripted.Timeout}, timeout: 20 * time.Millisecond,
			wantErr: chain.ErrTimeout, errText: "scripted: call get_article (attempt 1): tool timed out: context deadline exceeded",
			list: `{"code":200,"data":{"items":[],"total":0},"msg":"ok"}`,
		},
		{
			name: "unreachable", tool: "create_article", args: `{"title":"A"}`, fault: scripted.Fault{Kind: scripted.Unreachable},
			wantErr: chain.ErrUnreachable, errText: "scripted: call create_article (attempt 1): tool unreachable: injected fault",
			list: `{"code":200,"data":{"items":[],"total":0},"msg":"ok"}`,
		},
		{
			name: "io error", tool: "get_article", fault: scripted.Fault{Kind: scripted.Error, Err: chain.ErrIO},
			wantErr: chain.ErrIO, errText: "scripted: call get_article (attempt 1): tool I/O error: injected fault",
			list: `{"code":200,"data":{"items":[],"total":0},"msg":"ok"}`,
		},
		{
			name: "rpc error", tool: "get_article", fault: scripted.Fault{Kind: scripted.Error, Err: chain.ErrRPC},
			wantErr: chain.ErrRPC, errText: "scripted: call get_article (attempt 1): tool RPC error: injected fault",
			list: `{"code":200,"data":{"items":[],"total":0},"msg":"ok"}`,
		},
		{
			name: "invalid params", tool: "create_article", fault: scripted.Fault{Kind: scripted.Error, Err: chain.ErrInvalidParams},
			wantErr: chain.ErrInvalidParams, errText: "scripted: call create_article (attempt 1): tool invalid params: injected fault",
			list: `{"code":200,"data":{"items":[],"total":0},"msg":"ok"}`,
		},
		{
			name: "unknown error", tool: "get_article", fault: scripted.Fault{Kind: scripted.Error},
			wantErr: scripted.ErrUnknown, errText: "scripted: call get_article (attempt 1): scripted: injected unknown error",
			list: `{"code":200,"data":{"items":[],"total":0},"msg":"ok"}`,
		},
		{
			name: "custom error", tool: "get_article", fault: scripted.Fault{Kind: scripted.Error, Err: errFixed},
			wantErr: errFixed, errText: "scripted: call get_article (attempt 1): fixed: injected fault",
			list: `{"code":200,"data":{"items":[],"total":0},"msg":"ok"}`,
		},
		{
			name: "iserror", tool: "create_article", args: `{"title":"A"}`, fault: scripted.Fault{Kind: scripted.IsError, Text: "title is reserved"},
			want: chain.Response{IsError: true, Text: "title is reserved"},
			list: `{"code":200,"data":{"items":[],"total":0},"msg":"ok"}`,
		},
		{
			name: "business", tool: "create_article", args: `{"title":"A"}`, fault: scripted.Fault{Kind: scripted.Business, Text: "quota exceeded"},
			want: resp(`{"code":500,"data":null,"msg":"quota exceeded"}`),
			list: `{"code":200,"data":{"items":[],"total":0},"msg":"ok"}`,
		},
		{
			name: "business body", tool: "create_article", args: `{"title":"A"}`, fault: scripted.Fault{Kind: scripted.Business, Body: json.RawMessage(`{"code":50001,"msg":"no space"}`)},
			want: resp(`{"code":50001,"msg":"no space"}`),
			list: `{"code":200,"data":{"items":[],"total":0},"msg":"ok"}`,
		},
		{
			name: "empty", tool: "get_article", args: `{"articleId":"art-1"}`, fault: scripted.Fault{Kind: scripted.Empty},
			want: chain.Response{},
			list: `{"code":200,"data":{"items":[],"total":0},"msg":"ok"}`,
		},
		{
			name: "empty body", tool: "list_articles", fault: scripted.Fault{Kind: scripted.Empty, Body: json.RawMessage(`{"code":200,"msg":"ok","data":{"items":[],"total":0}}`)},
			want: resp(`{"code":200,"msg":"ok","data":{"items":[],"total":0}}`),
			list: `{"code":200,"data":{"items":[],"total":0},"msg":"ok"}`,
		},
		{
			name: "partial", tool: "list_articles", fault: scripted.Fault{Kind: scripted.Partial},
			want: resp(`{"code":200,"data":{"items":[],"total":0},"msg":"ok"}`),
			list: `{"code":200,"data":{"items":[],"total":0},"msg":"ok"}`,
		},
		{
			name: "partial body", tool: "create_article", args: `{"title":"A"}`, fault: scripted.Fault{Kind: scripted.Partial, Body: json.RawMessage(`{"code":206,"msg":"partial"}`)},
			want: resp(`{"code":206,"msg":"partial"}`),
			list: `{"code":200,"data":{"items":[{"articleId":"art-1","title":"A"}],"total":1},"msg":"ok"}`,
		},
		{
			name: "commit then timeout", tool: "create_article", args: `{"title":"A"}`, fault: scripted.Fault{Kind: scripted.CommitThenTimeout}, timeout: 20 * time.Millisecond,
			wantErr: chain.ErrTimeout, errText: "scripted: call create_article (attempt 1): tool timed out: context deadline exceeded",
			list: `{"code":200,"data":{"items":[{"articleId":"art-1","title":"A"}],"total":1},"msg":"ok"}`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := cms(map[string][]scripted.Fault{tc.tool: {tc.fault}})
			ctx := t.Context()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			got, err := s.CallTool(ctx, tc.tool, json.RawMessage(tc.args))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || err.Error() != tc.errText {
					t.Fatalf("err = %v, want %q", err, tc.errText)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if got.IsError != tc.want.IsError || got.Text != tc.want.Text || string(got.Content) != string(tc.want.Content) {
				t.Fatalf("response\n got %+v (content %s)\nwant %+v (content %s)", got, got.Content, tc.want, tc.want.Content)
			}
			list, err := s.CallTool(t.Context(), "list_articles", nil)
			if err != nil || string(list.Content) != tc.list {
				t.Fatalf("list_articles = %s (%v), want %s", list.Content, err, tc.list)
			}
		})
	}
}

func resp(body string) chain.Response {
	return chain.Response{Content: json.RawMessage(body), Text: body}
}

// TestPerAttempt: faults apply to the attempt they are listed for.
func TestPerAttempt(t *testing.T) {
	t.Parallel()
	s := cms(map[string][]scripted.Fault{"get_article": {{Kind: scripted.Timeout}, {Kind: scripted.Error, Err: chain.ErrIO}}})
	s.State().Put("articles", "art-9", json.RawMessage(`{"articleId":"art-9"}`))
	args := json.RawMessage(`{"articleId":"art-9"}`)

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if _, err := s.CallTool(ctx, "get_article", args); !errors.Is(err, chain.ErrTimeout) {
		t.Fatalf("attempt 1: %v", err)
	}
	if _, err := s.CallTool(t.Context(), "get_article", args); !errors.Is(err, chain.ErrIO) {
		t.Fatalf("attempt 2: %v", err)
	}
	got, err := s.CallTool(t.Context(), "get_article", args)
	if err != nil || string(got.Content) != `{"code":200,"data":{"articleId":"art-9"},"msg":"ok"}` {
		t.Fatalf("attempt 3: %s (%v)", got.Content, err)
	}
	// Arm counts from the next call.
	if err := s.Arm("get_article", scripted.Fault{Kind: scripted.Unreachable}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CallTool(t.Context(), "get_article", args); !errors.Is(err, chain.ErrUnreachable) {
		t.Fatalf("attempt 4: %v", err)
	}
	var kinds []string
	for _, c := range s.Calls() {
		kinds = append(kinds, c.Fault.String())
	}
	if got, want := kinds, []string{"timeout", "error", "none", "unreachable"}; !slices.Equal(got, want) {
		t.Fatalf("faults %v, want %v", got, want)
	}
	if n := s.Count("get_article"); n != 4 {
		t.Fatalf("count %d, want 4", n)
	}
}

func TestUnknownTool(t *testing.T) {
	t.Parallel()
	s := cms(nil)
	_, err := s.CallTool(t.Context(), "nope", nil)
	if !errors.Is(err, scripted.ErrUnknownTool) || !errors.Is(err, chain.ErrInvalidParams) || err.Error() != `scripted: unknown tool "nope": tool invalid params` {
		t.Fatalf("err = %v", err)
	}
	if err := s.Arm("nope"); !errors.Is(err, scripted.ErrUnknownTool) {
		t.Fatalf("Arm: %v", err)
	}
}

func TestDuplicates(t *testing.T) {
	t.Parallel()
	s := cms(nil)
	for _, args := range []string{`{"title":"A","body":"x"}`, `{"title":"B"}`, `{"body":"x","title":"A"}`} {
		if _, err := s.CallTool(t.Context(), "create_article", json.RawMessage(args)); err != nil {
			t.Fatal(err)
		}
	}
	s.CallTool(t.Context(), "get_article", json.RawMessage(`{"articleId":"art-1"}`))
	s.CallTool(t.Context(), "get_article", json.RawMessage(`{"articleId":"art-1"}`))
	d := s.Duplicates()
	if len(d) != 1 || d[0].Tool != "create_article" || d[0].Attempt != 3 || string(d[0].Args) != `{"body":"x","title":"A"}` {
		t.Fatalf("duplicates %+v", d)
	}
}

func TestListTools(t *testing.T) {
	t.Parallel()
	s := scripted.New(nil,
		scripted.Tool{Tool: tools.Tool{Name: "b", Title: "B", InputSchema: json.RawMessage(`{"type":"object","required":["x"]}`)}},
		scripted.Tool{Tool: tools.Tool{Name: "a"}},
	)
	list, _ := s.ListTools(t.Context())
	got, _ := json.Marshal(list)
	want := `[{"name":"b","title":"B","inputSchema":{"type":"object","required":["x"]}},{"name":"a","inputSchema":{"type":"object"}}]`
	if string(got) != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}

// TestConcurrent hammers one Server; run with -race.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	s := cms(nil)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args, _ := json.Marshal(map[string]int{"n": i})
			if _, err := s.CallTool(t.Context(), "create_article", args); err != nil {
				t.Error(err)
			}
			s.CallTool(t.Context(), "list_articles", nil)
		}()
	}
	wg.Wait()
	if n := len(s.State().List("articles")); n != 50 || len(s.Duplicates()) != 0 || s.Count("list_articles") != 50 {
		t.Fatalf("articles %d, duplicates %d", n, len(s.Duplicates()))
	}
}

// TestPartialHalves: a partial answer keeps the first half of each array.
func TestPartialHalves(t *testing.T) {
	t.Parallel()
	s := cms(map[string][]scripted.Fault{"list_articles": {{Kind: scripted.Partial}}})
	for _, id := range []string{"a-1", "a-2", "a-3"} {
		s.State().Put("articles", id, json.RawMessage(`{"id":"`+id+`","tags":[1,2]}`))
	}
	got, err := s.CallTool(t.Context(), "list_articles", nil)
	want := `{"code":200,"data":{"items":[{"id":"a-1","tags":[1]},{"id":"a-2","tags":[1]}],"total":3},"msg":"ok"}`
	if err != nil || string(got.Content) != want {
		t.Fatalf("got %s (%v)\nwant %s", got.Content, err, want)
	}
}
