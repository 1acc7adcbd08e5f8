//go:build jsonschema_nopattern

package jsonschema

import (
	"errors"
	"testing"
)

func TestPatternLeftOut(t *testing.T) {
	t.Parallel()
	if _, err := Compile([]byte(`{"pattern":"^a"}`)); !errors.Is(err, ErrPattern) {
		t.Fatalf("err = %v, want ErrPattern", err)
	}
	s, err := Compile([]byte(`{"type":"string","format":"email"}`))
	if err != nil {
		t.Fatal(err)
	}
	if errs := s.Validate([]byte(`"a@b.co"`)); errs != nil {
		t.Fatal(errs)
	}
}
