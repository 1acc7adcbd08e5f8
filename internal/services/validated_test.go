package services

import (
	"context"
	"testing"

	"github.com/tidwall/gjson"
)

func TestValidatedMemo(t *testing.T) {
	t.Parallel()
	const schema = `{"type":"object","required":["a"]}`
	ctx := WithValidated(context.Background())
	tests := []struct {
		name   string
		ctx    context.Context
		doc    string
		before bool // ValidBefore after Validate
	}{
		{"valid, remembered", ctx, `{"a":1}`, true},
		{"invalid, not remembered", ctx, `{"b":1}`, false},
		{"other bytes of an equal value are not the same document", ctx, `{ "a":1}`, true},
		{"without a memo", context.Background(), `{"a":2}`, false},
	}
	for _, tt := range tests {
		if ValidBefore(tt.ctx, schema, tt.doc) {
			t.Fatalf("%s: valid before validating", tt.name)
		}
		if _, err := Validate(tt.ctx, schema, gjson.Parse(tt.doc)); err != nil {
			t.Fatal(err)
		}
		if got := ValidBefore(tt.ctx, schema, tt.doc); got != tt.before {
			t.Errorf("%s: ValidBefore = %v", tt.name, got)
		}
	}
	if ValidBefore(ctx, `{"type":"array"}`, `{"a":1}`) {
		t.Error("valid against another schema")
	}
	if ValidBefore(WithValidated(context.Background()), schema, `{"a":1}`) {
		t.Error("another call's memo answered")
	}
}
