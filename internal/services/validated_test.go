package services

import (
	"context"
	"testing"
	"unsafe"

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

// TestValidatedMemoKept: the memo copies what may live in a reused buffer,
// so bytes rewritten after a Validate are not taken for the document it
// found valid; ValidateIn with kept keeps the caller's bytes as they are.
func TestValidatedMemoKept(t *testing.T) {
	t.Parallel()
	const schema = `{"type":"object","required":["a"]}`
	ctx := WithValidated(context.Background())
	buf := []byte(`{"a":1}`)
	if out, err := Validate(ctx, schema, gjson.Parse(unsafe.String(unsafe.SliceData(buf), len(buf)))); err != nil || out != nil {
		t.Fatalf("Validate = %q, %v", out, err)
	}
	copy(buf, `{"b":1}`) // the buffer reused
	if ValidBefore(ctx, schema, `{"b":1}`) {
		t.Fatal("the memo kept the reused buffer: rewritten bytes taken as valid")
	}
	if !ValidBefore(ctx, schema, `{"a":1}`) {
		t.Fatal("the valid document was not remembered")
	}
	const kept = `{"a":[2]}`
	if out, err := ValidateIn(ctx, schema, gjson.Parse(kept), true); err != nil || out != nil {
		t.Fatalf("ValidateIn = %q, %v", out, err)
	}
	if !ValidBefore(ctx, schema, kept) {
		t.Fatal("ValidateIn with kept bytes: not remembered")
	}
	if out, _ := ValidateIn(ctx, schema, gjson.Parse(`[]`), true); len(out) == 0 || ValidBefore(ctx, schema, `[]`) {
		t.Fatalf("an invalid document: %q, remembered %v", out, ValidBefore(ctx, schema, `[]`))
	}
}
