package contract

import (
	"reflect"
	"slices"
	"testing"
)

// A path without "[]" expands through the paths its parser made; the
// general walk must give the same slot.
func TestExpandPlainAsWalk(t *testing.T) {
	t.Parallel()
	doc := []byte(`{"a":{"b.c":1,"d":"x"},"k":null,"e":"","lines":[{"g":1}],"q?":2}`)
	for _, path := range []string{"a", "a.d", "a.b.c", "k", "e", "missing", "lines", "lines.0.g", "q?", "a.*"} {
		p, err := ParseParamPath(path)
		if err != nil {
			t.Fatal(err)
		}
		if !p.plain {
			t.Fatalf("%s: not plain", path)
		}
		walked := ParamPath{raw: p.raw, segs: p.segs}
		if got, want := p.Expand(doc), walked.Expand(doc); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: plain %+v, walked %+v", path, got, want)
		}
	}
	if p := MustParamPath("lines[].g"); p.plain {
		t.Error("lines[].g: plain")
	}
}

// ArgPaths answers the parser's sorted keys while Args keeps them, and
// sorts again once Args changed.
func TestArgPathsAfterParse(t *testing.T) {
	t.Parallel()
	c, _, err := Parse("s", []byte(`{"tools":{"t":{"args":{"b":{},"a":{},"c":{}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	tool := c.Tools["t"]
	if got := tool.ArgPaths(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("ArgPaths = %v", got)
	}
	tool.ArgPaths()[0] = "z" // a caller's copy
	delete(tool.Args, "b")
	tool.Args["d"] = &Arg{}
	if got := tool.ArgPaths(); !slices.Equal(got, []string{"a", "c", "d"}) {
		t.Fatalf("after a change, ArgPaths = %v", got)
	}
	if got := (&Tool{}).ArgPaths(); got == nil || len(got) != 0 {
		t.Fatalf("no args: %#v", got)
	}
}
