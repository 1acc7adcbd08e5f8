package mcp

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
)

func TestIsJSONRPC(t *testing.T) {
	t.Parallel()
	tests := []struct {
		msg  string
		want bool
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, true},
		{`{"jsonrpc":"2.0","method":"notifications/message"}`, true},
		{`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{}}]`, true},
		{`{"level":"info","msg":"listening"}`, false},
		{`{"jsonrpc":"1.0","id":1}`, false},
		{`{"JSONRPC":"2.0","id":1}`, false},
		{`{"jsonrpc":2.0,"id":1}`, false},
		{`[]`, false},
		{`[{"jsonrpc":"2.0","id":1},{"level":"info"}]`, false},
		{`[1]`, false},
		{`{"jsonrpc":"2.0"`, false},
		{`"jsonrpc"`, false},
	}
	for _, tt := range tests {
		if got := isJSONRPC([]byte(tt.msg)); got != tt.want {
			t.Errorf("isJSONRPC(%s) = %v, want %v", tt.msg, got, tt.want)
		}
	}
}

// TestFilter: what the stdout filter passes on, and what it drops and
// counts: lines that are not JSON-RPC, and lines over the bound (read to
// their newline, whatever the reader's buffer size).
func TestFilter(t *testing.T) {
	t.Parallel()
	msg := func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"result":{}}` }
	long := `{"jsonrpc":"2.0","id":9,"result":{"text":"` + strings.Repeat("x", 100_000) + `"}}`
	tests := []struct {
		name    string
		in      string
		maxLine int
		want    string
		skipped int64
	}{
		{name: "messages pass, trimmed, the last without its newline",
			in: msg("1") + "\r\n  " + msg("2") + "  \n" + msg("3"), want: msg("1") + "\n" + msg("2") + "\n" + msg("3") + "\n"},
		{name: "banner, log lines and blank lines are skipped",
			in: "starting\n" + `{"level":"info","msg":"up"}` + "\n\n" + `[{"level":"debug"}]` + "\n" + msg("1") + "\n", want: msg("1") + "\n", skipped: 3},
		{name: "a line at the bound passes", maxLine: len(msg("1")),
			in: msg("1") + "\n", want: msg("1") + "\n"},
		{name: "a line over the bound is dropped to its newline, the next passes", maxLine: len(msg("1")),
			in: msg("10") + "\n" + msg("2") + "\n", want: msg("2") + "\n", skipped: 1},
		{name: "a line over the reader's buffer and the bound", maxLine: 1000,
			in: msg("1") + "\n" + long + "\n" + msg("2") + "\n", want: msg("1") + "\n" + msg("2") + "\n", skipped: 1},
		{name: "a long line within the bound passes",
			in: long + "\n" + msg("2") + "\n", want: long + "\n" + msg("2") + "\n"},
		{name: "an oversize last line without a newline", maxLine: 10,
			in: msg("1"), want: "", skipped: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var skipped atomic.Int64
			var peeked int
			tr := &stdioTransport{log: slog.New(slog.DiscardHandler), server: "s", skipped: &skipped, maxLine: tt.maxLine,
				peek: func([]byte) { peeked++ }}
			pr, pw := io.Pipe()
			got := make(chan string)
			go func() {
				b, _ := io.ReadAll(pr)
				got <- string(b)
			}()
			tr.filter(strings.NewReader(tt.in), pw)
			out := <-got
			if out != tt.want {
				t.Errorf("passed on %q, want %q", out, tt.want)
			}
			if n := skipped.Load(); n != tt.skipped {
				t.Errorf("skipped %d, want %d", n, tt.skipped)
			}
			if want := bytes.Count([]byte(tt.want), []byte("\n")); peeked != want {
				t.Errorf("peeked %d, want %d", peeked, want)
			}
		})
	}
}
