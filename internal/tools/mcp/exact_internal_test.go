package mcp

import (
	"testing"
)

// TestExactTracker: a raw result is kept for the request that carried an
// expected token, matched by id as JSON text (7 and "7" stay apart), in
// single messages and batches; others are ignored, and take forgets.
func TestExactTracker(t *testing.T) {
	t.Parallel()
	var x exact
	x.expect("warden-1")
	x.expect("warden-2")
	x.sent([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a","_meta":{"progressToken":"warden-1"}}}`))
	x.sent([]byte(`[{"jsonrpc":"2.0","id":"7","method":"tools/call","params":{"_meta":{"progressToken":"warden-2"}}},{"jsonrpc":"2.0","method":"notifications/x"}]`))
	x.sent([]byte(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"_meta":{"progressToken":"warden-9"}}}`)) // not expected
	x.received([]byte(`{"jsonrpc":"2.0","id":8,"result":{"n":8}}`))
	x.received([]byte(`[{"jsonrpc":"2.0","id":"7","result":{"n":"seven"}},{"jsonrpc":"2.0","id":7,"result":{"n":1234567890123456789}}]`))
	if raw, ok := x.take("warden-1"); !ok || string(raw) != `{"n":1234567890123456789}` {
		t.Fatalf("warden-1: %s %v", raw, ok)
	}
	if raw, ok := x.take("warden-2"); !ok || string(raw) != `{"n":"seven"}` {
		t.Fatalf("warden-2: %s %v", raw, ok)
	}
	if _, ok := x.take("warden-1"); ok {
		t.Fatal("take did not forget")
	}
	if len(x.ids) != 0 || len(x.raw) != 0 || len(x.want) != 0 {
		t.Fatalf("left behind: %v %v %v", x.ids, x.raw, x.want)
	}
	// A message past the bound is not parsed.
	x.expect("warden-3")
	big := make([]byte, maxPeek+1)
	x.sent(append([]byte(`{"id":1,"params":{"_meta":{"progressToken":"warden-3"}},"x":"`), big...))
	if len(x.ids) != 0 {
		t.Fatal("a message past the bound was parsed")
	}
}

// TestLineTap: every complete line written is seen once, whatever the
// chunks, and the writes pass through.
func TestLineTap(t *testing.T) {
	t.Parallel()
	var seen []string
	var out sink
	tap := &lineTap{WriteCloser: &out, see: func(b []byte) { seen = append(seen, string(b)) }}
	for _, chunk := range []string{`{"a":1}` + "\n" + `{"b"`, `:2}` + "\n", "\n"} {
		if _, err := tap.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{`{"a":1}`, `{"b":2}`, ""}; len(seen) != 3 || seen[0] != want[0] || seen[1] != want[1] || seen[2] != want[2] {
		t.Fatalf("seen %q", seen)
	}
	if string(out) != `{"a":1}`+"\n"+`{"b":2}`+"\n\n" {
		t.Fatalf("passed %q", out)
	}
}

type sink []byte

func (s *sink) Write(p []byte) (int, error) { *s = append(*s, p...); return len(p), nil }
func (s *sink) Close() error                { return nil }
