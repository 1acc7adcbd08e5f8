package contract

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func mustTool(t *testing.T, toolJSON string) *Tool {
	t.Helper()
	c, _, err := Parse("k", []byte(`{"tools":{"t":`+toolJSON+`}}`))
	if err != nil {
		t.Fatal(err)
	}
	return c.Tool("t")
}

func TestParamPath(t *testing.T) {
	t.Parallel()
	doc := []byte(`{"title":"T","orderInfo":{"taxNo":"91"},"lines":[{"goodsCode":"A"},{"goodsCode":""},{}],"a@b":{"c":1}}`)
	tests := []struct {
		path, get, leaf string
		slots           []string
	}{
		{"title", `"T"`, "title", []string{"title"}},
		{"orderInfo.taxNo", `"91"`, "taxNo", []string{"orderInfo.taxNo"}},
		{"lines[].goodsCode", `["A",""]`, "goodsCode", []string{"lines.0.goodsCode", "lines.1.goodsCode", "lines.2.goodsCode"}},
		{"lines.0.goodsCode", `"A"`, "goodsCode", []string{"lines.0.goodsCode"}},
		{"a@b.c", `1`, "c", []string{"a@b.c"}},
		{"absent[].x", ``, "x", nil},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			t.Parallel()
			p := MustParamPath(tt.path)
			if got := p.Get(doc).Raw; got != tt.get {
				t.Errorf("Get = %s, want %s", got, tt.get)
			}
			if p.Leaf() != tt.leaf {
				t.Errorf("Leaf = %s", p.Leaf())
			}
			var slots []string
			for _, s := range p.Expand(doc) {
				slots = append(slots, s.Path)
			}
			if fmt.Sprint(slots) != fmt.Sprint(tt.slots) {
				t.Errorf("Expand = %v, want %v", slots, tt.slots)
			}
		})
	}
	for _, bad := range []string{"", "a..b", "lines[0].x", "[]", "a[]b"} {
		if _, err := ParseParamPath(bad); !errors.Is(err, ErrBadParamPath) {
			t.Errorf("ParseParamPath(%q) = %v", bad, err)
		}
	}
	out, err := SetRaw([]byte(`{}`), "a@b.c", []byte(`2`))
	if err != nil || string(out) != `{"a@b":{"c":2}}` {
		t.Errorf("SetRaw with special characters = %s, %v", out, err)
	}
}

func TestBind(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, tool, args, want string
		bindings               []string // "path=source"
	}{
		{
			name: "const overwrites the model", tool: `{"args":{"currency":{"const":"CNY"}}}`,
			args: `{"currency":"USD"}`, want: `{"currency":"CNY"}`, bindings: []string{"currency=CONTRACT"},
		},
		{
			name: "from overwrites the model", tool: `{"args":{"spaceId":{"from":"shared.spaceId"}}}`,
			args: `{"spaceId":"mine"}`, want: `{"spaceId":"S2"}`, bindings: []string{"spaceId=SHARED"},
		},
		{
			name: "from without a value keeps the model's", tool: `{"args":{"spaceId":{"from":"shared.absent"}}}`,
			args: `{"spaceId":"mine"}`, want: `{"spaceId":"mine"}`,
		},
		{
			name: "nested path", tool: `{"args":{"orderInfo.taxNo":{"from":"prior.customer:C1.taxNo"}}}`,
			args: `{"orderInfo":{"amount":3}}`, want: `{"orderInfo":{"amount":3,"taxNo":"TX1"}}`, bindings: []string{"orderInfo.taxNo=PRIOR_TASK"},
		},
		{
			name: "platform", tool: `{"args":{"userId":{"from":"platform.userId"}}}`,
			args: ``, want: `{"userId":1001}`, bindings: []string{"userId=PLATFORM"},
		},
		{
			name: "evidence index", tool: `{"args":{"tagId":{"from":"evidence.tag_list.0.id"}}}`,
			args: `{}`, want: `{"tagId":"t1"}`, bindings: []string{"tagId=EVIDENCE"},
		},
		{
			name: "UNIQUE evidence binds the one-element array", tool: `{"args":{"space":{"from":"evidence.space","when":"UNIQUE"}}}`,
			args: `{}`, want: `{"space":[{"spaceId":"S7"}]}`, bindings: []string{"space=EVIDENCE"},
		},
		{
			name: "UNIQUE evidence with two candidates binds nothing", tool: `{"args":{"space":{"from":"evidence.spaces","when":"UNIQUE"}}}`,
			args: `{}`, want: `{}`,
		},
		{
			name: "UNIQUE evidence that is not an array binds nothing", tool: `{"args":{"t":{"from":"evidence.tag_list.0.id","when":"UNIQUE"}}}`,
			args: `{}`, want: `{}`,
		},
		{
			name: "UNIQUE path with one item", tool: `{"args":{"id":{"from":"shared.one[].id","when":"UNIQUE"}}}`,
			args: `{}`, want: `{"id":"X"}`, bindings: []string{"id=SHARED"},
		},
		{
			name: "UNIQUE path with three items", tool: `{"args":{"code":{"from":"shared.cart[].code","when":"UNIQUE"}}}`,
			args: `{}`, want: `{}`,
		},
		{
			name: "array template fills only empty indexes", tool: `{"args":{"lines[].goodsCode":{"from":"shared.cart[].code"}}}`,
			args:     `{"lines":[{"goodsCode":"MINE","qty":1},{"qty":2},{"goodsCode":""}]}`,
			want:     `{"lines":[{"goodsCode":"MINE","qty":1},{"qty":2,"goodsCode":"G2"},{"goodsCode":"G3"}]}`,
			bindings: []string{"lines.1.goodsCode=SHARED", "lines.2.goodsCode=SHARED"},
		},
		{
			name: "array template creates missing items", tool: `{"args":{"lines[].goodsCode":{"from":"outputs.lines[].code"}}}`,
			args: `{}`, want: `{"lines":[{"goodsCode":"A"},{"goodsCode":"B"}]}`,
			bindings: []string{"lines.0.goodsCode=NODE_OUTPUT", "lines.1.goodsCode=NODE_OUTPUT"},
		},
		{
			name: "const on every item", tool: `{"args":{"lines[].unit":{"const":"PCS"}}}`,
			args: `{"lines":[{"q":1},{"q":2}]}`, want: `{"lines":[{"q":1,"unit":"PCS"},{"q":2,"unit":"PCS"}]}`,
			bindings: []string{"lines.0.unit=CONTRACT", "lines.1.unit=CONTRACT"},
		},
		{
			name: "evidence is never a template", tool: `{"args":{"lines[].tag":{"from":"evidence.tag_list.1.id"}}}`,
			args: `{"lines":[{},{}]}`, want: `{"lines":[{"tag":"t2"},{"tag":"t2"}]}`,
			bindings: []string{"lines.0.tag=EVIDENCE", "lines.1.tag=EVIDENCE"},
		},
		{
			name: "unlisted parameters are left alone", tool: `{"args":{"a":{"sources":["USER"]}}}`,
			args: `{"a":1,"b":2}`, want: `{"a":1,"b":2}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := mustTool(t, tt.tool).Bind([]byte(tt.args), scope)
			if err != nil {
				t.Fatal(err)
			}
			if string(b.Args) != tt.want {
				t.Errorf("args = %s\nwant   %s", b.Args, tt.want)
			}
			var got []string
			for _, x := range b.Bindings {
				got = append(got, x.Path+"="+string(x.Source))
			}
			if strings.Join(got, " ") != strings.Join(tt.bindings, " ") {
				t.Errorf("bindings = %v, want %v", got, tt.bindings)
			}
		})
	}
}

func TestBindProvenance(t *testing.T) {
	t.Parallel()
	b, err := mustTool(t, `{"args":{"tagId":{"from":"evidence.tag_list.0.id"},"cust":{"from":"prior.customer.id"}}}`).Bind([]byte(`{}`), scope)
	if err != nil {
		t.Fatal(err)
	}
	x, ok := b.SourceOf("tagId")
	if !ok || x.Ref != "ev-3" || x.Param != "tagId" || string(x.Value) != `"t1"` {
		t.Errorf("tagId binding = %+v", x)
	}
	if x, _ := b.SourceOf("cust"); x.Ref != "customer:C2" {
		t.Errorf("cust binding = %+v", x)
	}
	if _, ok := b.SourceOf("nope"); ok {
		t.Error("unbound path reported")
	}
}

func TestBindRejectsNonObject(t *testing.T) {
	t.Parallel()
	for _, args := range []string{`[1]`, `"x"`, `{bad`} {
		_, err := mustTool(t, `{}`).Bind([]byte(args), scope)
		if !errors.Is(err, ErrArgsNotObject) || err.Error() != "contract: bind t: arguments are not a JSON object" {
			t.Errorf("Bind(%s) = %v", args, err)
		}
	}
	var nilTool *Tool
	b, err := nilTool.Bind([]byte(`{"a":1}`), scope)
	if err != nil || string(b.Args) != `{"a":1}` {
		t.Errorf("nil tool: %s %v", b.Args, err)
	}
}

func TestVerifyBuildArgs(t *testing.T) {
	t.Parallel()
	tool := mustTool(t, `{"verify":{"tool":"t","args":{"orderNo":{"from":"call.orderInfo.orderNo"},"status":{"const":"ISSUED"},"gone":{"from":"call.nothing"}}}}`)
	got, err := tool.Verify.BuildArgs([]byte(`{"orderInfo":{"orderNo":"SO-1"},"x":1}`))
	if err != nil || string(got) != `{"orderNo":"SO-1","status":"ISSUED"}` {
		t.Errorf("BuildArgs = %s, %v", got, err)
	}
	whole := mustTool(t, `{"verify":{"tool":"t"}}`)
	got, _ = whole.Verify.BuildArgs([]byte(`{"x":1}`))
	if string(got) != `{"x":1}` {
		t.Errorf("without args the request passes whole: %s", got)
	}
}
