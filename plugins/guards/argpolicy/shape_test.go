package argpolicy

import "testing"

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
			ArgShape{Kind: KindSyntax, Line: 1, Column: 9, Message: "invalid character '}' in literal true (expecting 'e')"}},
		{"second line", `{"argsText":"{\n  x}"}`,
			ArgShape{Kind: KindSyntax, Line: 2, Column: 3, Message: "invalid character 'x' looking for beginning of object key string"}},
		{"early end points past it", `{"argsText":"{\"a\":"}`,
			ArgShape{Kind: KindSyntax, Line: 1, Column: 6, Message: "unexpected end of JSON input"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Shape([]byte(tt.req)); got != tt.want {
				t.Fatalf("got %+v; want %+v", got, tt.want)
			}
		})
	}
}
