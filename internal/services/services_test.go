package services

import (
	"errors"
	"testing"
)

func TestDigestCanonical(t *testing.T) {
	t.Parallel()
	req := []byte(`{"a":{"y":[1, 2, {"k":"v","b":true}],"x":"s"},"b":{"x":"s","y":[1,2,{"b":true,"k":"v"}]}}`)
	a, err := Call("digest", req, []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Call("digest", req, []byte("b"))
	if string(a) != string(b) || len(a) != 64 {
		t.Fatalf("digests differ or malformed: %s %s", a, b)
	}
	if got := string(Canonical(gjsonGet(req, "a"))); got != `{"x":"s","y":[1,2,{"b":true,"k":"v"}]}` {
		t.Fatalf("canonical = %s", got)
	}
	if _, err := Call("nope", req, nil); !errors.Is(err, ErrUnknown) {
		t.Fatalf("unknown service: %v", err)
	}
}
