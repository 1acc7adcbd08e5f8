package argpolicy

import (
	"context"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

// shapeByCall is ShapeOf read through a guest.Call (run natively).
func shapeByCall(t *testing.T, req string) ArgShape {
	t.Helper()
	var got ArgShape
	p := guest.Plugin{Manifest: abi.Manifest{Name: "shape", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle: func(c *guest.Call) { got = ShapeOf(c); c.Pass(nil) }}
	n, err := guest.NewNative(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Call(context.Background(), []byte(req)); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestShape(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, req string
		want      ArgShape
	}{
		{"object", `{"args":{"a":1}}`, ArgShape{Kind: KindObject}},
		{"absent", `{"tool":"t"}`, ArgShape{Kind: KindAbsent}},
		{"array", `{"args":[1]}`, ArgShape{Kind: KindOther, Type: "array"}},
		{"string", `{"args":"x"}`, ArgShape{Kind: KindOther, Type: "string"}},
		{"boolean", `{"args":true}`, ArgShape{Kind: KindOther, Type: "boolean"}},
		{"null", `{"args":null}`, ArgShape{Kind: KindOther, Type: "null"}},
		{"number", `{"args":3}`, ArgShape{Kind: KindOther, Type: "number"}},
		{"syntax error points at the byte", `{"argsText":"{\"a\":tru}"}`,
			ArgShape{Kind: KindSyntax, Line: 1, Column: 9, Message: "invalid character '}' in literal true (expecting 'e')", Excerpt: `{"a":tru}`}},
		{"second line", `{"argsText":"{\n  x}"}`,
			ArgShape{Kind: KindSyntax, Line: 2, Column: 3, Message: "invalid character 'x' looking for beginning of object key string", Excerpt: `{\n  x}`}},
		{"early end points past it", `{"argsText":"{\"a\":"}`,
			ArgShape{Kind: KindSyntax, Line: 1, Column: 6, Message: "unexpected end of JSON input", Excerpt: `{"a":`}},
		{"only whitespace is no arguments", `{"argsText":" \n\t "}`, ArgShape{Kind: KindAbsent}},
		{"a long text is quoted around the error, bounded", `{"argsText":"{\"a\":\"` + strings.Repeat("x", 100) + `\",\"b\":tru,\"c\":\"` + strings.Repeat("y", 100) + `\"}"}`,
			ArgShape{Kind: KindSyntax, Line: 1, Column: 116, Message: "invalid character ',' in literal true (expecting 'e')",
				Excerpt: "…" + strings.Repeat("x", 51) + `","b":tru,"c":"` + strings.Repeat("y", 14) + "…"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Shape([]byte(tt.req)); got != tt.want {
				t.Fatalf("got %+v; want %+v", got, tt.want)
			}
			// Through a Call the kind comes from the host's walk.
			if got := shapeByCall(t, tt.req); got != tt.want {
				t.Fatalf("through a call: got %+v; want %+v", got, tt.want)
			}
		})
	}
}
