package services

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/tidwall/gjson"
)

func TestDigestCanonical(t *testing.T) {
	t.Parallel()
	req := []byte(`{"a":{"y":[1, 2, {"k":"v","b":true}],"x":"s"},"b":{"x":"s","y":[1,2,{"b":true,"k":"v"}]}}`)
	a, err := Digest(req, "a")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Digest(req, "b")
	if a != b || a != sha256.Sum256([]byte(`{"x":"s","y":[1,2,{"b":true,"k":"v"}]}`)) {
		t.Fatalf("digests differ or are not of the canonical form: %x %x", a, b)
	}
	if got := string(Canonical(gjson.GetBytes(req, "a"))); got != `{"x":"s","y":[1,2,{"b":true,"k":"v"}]}` {
		t.Fatalf("canonical = %s", got)
	}
	if none, _ := Digest(req, "absent"); none != sha256.Sum256([]byte("null")) {
		t.Fatalf("missing value: %x", none)
	}
	if _, err := Digest(req, "args|@pretty"); !errors.Is(err, ErrPath) {
		t.Fatalf("refused path: %v", err)
	}
}

func field(s string) string {
	return string(binary.LittleEndian.AppendUint32(nil, uint32(len(s)))) + s
}

func TestValidateEncoding(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema, doc, want string
	}{
		{"valid", `{"type":"object"}`, `{}`, ""},
		{"missing document is null", `{"type":"null"}`, ``, ""},
		{"problems", `{"type":"object","required":["b"],"properties":{"a":{"type":"string"}}}`, `{"a":1}`,
			"E" + field("a") + field("type") + field("expected string, got number") +
				field("b") + field("required") + field("required property is missing")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := gjson.Parse(tt.doc)
			if tt.doc == "" {
				doc = gjson.Result{}
			}
			got, err := Validate(context.Background(), tt.schema, doc)
			if err != nil || string(got) != tt.want {
				t.Fatalf("got %q, %v\nwant %q", got, err, tt.want)
			}
		})
	}
	got, err := Validate(context.Background(), `{"type":"nope"}`, gjson.Parse(`1`))
	if err != nil || len(got) < 2 || got[0] != 'S' {
		t.Fatalf("invalid schema: %q, %v", got, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Validate(ctx, `{"type":"string","minLength":3}`, gjson.Parse(`"x"`)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}
