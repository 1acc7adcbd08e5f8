// Package argpolicy is ArgPolicy, the first guard of the chain
// (CONTRACT_SPEC §13, step 1): before anything else looks at the model's
// arguments, they must be valid JSON (ARG_JSON_INVALID), a JSON object
// (ARG_REJECTED), and, when the tool declares an input schema, match it
// (ARG_REJECTED): required, types, additionalProperties, enum, minimum and
// maximum, pattern and format (TOOL_USE_RELIABILITY §1.3, §2.2), in any
// draft MCP servers emit, $ref into $defs or definitions included; a schema
// with a remote $ref does not compile and fails the node. Parameters
// the contract binds with from or const are exempt from required, because
// ArgBinding fills them next. One rejection names every failing field.
//
// All of it is REJECTED (TOOL_OBSERVATION §5): a model that follows the
// tool definition never meets it. The guest reads the shape of the
// arguments itself and asks the host's validate primitive for the schema
// check.
package argpolicy

import (
	"strconv"
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

// Plugin is the ArgPolicy guard.
var Plugin = guest.Plugin{
	Manifest: abi.Manifest{
		Name: "argpolicy", Version: "1.0.0", ABI: abi.Version, Role: abi.RoleGuard,
		Description: "arguments must be a JSON object that matches the tool's input schema",
		Phases:      []abi.Phase{abi.PhaseBefore},
	},
	Handle: handle,
}

func handle(c *guest.Call) {
	sh := ShapeOf(c)
	var l abi.Locale
	if sh.Kind == KindSyntax || sh.Kind == KindOther {
		l = c.Locale()
	}
	doc := abi.FieldArgs
	switch sh.Kind {
	case KindSyntax:
		detail := position(l, strconv.Itoa(sh.Line), strconv.Itoa(sh.Column)) + sh.Message + excerpt(l, sh.Excerpt)
		c.Rejected(abi.ArgJSONInvalid, abi.ArgJSONInvalid.Reason(l, "detail", detail), abi.NextFixArgs.Text(l))
		return
	case KindOther:
		c.Rejected(abi.ArgRejected, abi.ArgRejected.Reason(l, "tool", c.Tool(), "detail", notObject(l, sh.Type)), abi.NextFixArgs.Text(l))
		return
	case KindAbsent:
		// No arguments at all: checked as the empty object (a gjson literal).
		doc = "!{}"
	}
	if !c.Has(abi.FieldSchema) {
		c.Pass(nil)
		return
	}
	errs, err := c.Validate(abi.FieldSchema, doc)
	if err != nil || len(errs) > 0 {
		l = c.Locale() // only a refusal has texts
	}
	if err != nil {
		c.Rejected(abi.ArgRejected, abi.ArgRejected.Reason(l, "tool", c.Tool(), "detail", err.Error()), abi.NextFail.Text(l))
		return
	}
	var problems []string
	for _, e := range errs {
		if e.Keyword == "required" && bound(c, e.Path) {
			continue
		}
		problems = append(problems, e.Error())
	}
	if len(problems) == 0 {
		c.Pass(nil)
		return
	}
	sep := "；"
	if l == abi.LocaleEN {
		sep = "; "
	}
	c.Rejected(abi.ArgRejected, abi.ArgRejected.Reason(l, "tool", c.Tool(), "detail", strings.Join(problems, sep)), abi.NextFixArgs.Text(l))
}

func position(l abi.Locale, line, col string) string {
	if l == abi.LocaleEN {
		return "line " + line + ", column " + col + ": "
	}
	return "第 " + line + " 行第 " + col + " 列："
}

// excerpt quotes the text where the decoder stopped, so the model sees
// what to fix.
func excerpt(l abi.Locale, text string) string {
	if l == abi.LocaleEN {
		return "; the arguments there read: " + text
	}
	return "；该处参数原文：" + text
}

var typeNamesZH = map[string]string{"array": "数组", "string": "字符串", "number": "数字", "boolean": "布尔值", "null": "null"}

func notObject(l abi.Locale, typ string) string {
	if l == abi.LocaleEN {
		return "expected a JSON object, got " + typ
	}
	if zh, ok := typeNamesZH[typ]; ok {
		typ = zh
	}
	return "应为 JSON 对象，实际为" + typ
}

// bound reports whether the contract fills the parameter at a concrete path
// (lines.0.goodsCode) with from or const; the contract names it as a
// parameter path (lines[].goodsCode).
func bound(c *guest.Call, concrete string) bool {
	spec := c.Get(abi.FieldContract + ".args." + guest.Escape(paramPath(concrete)))
	if !spec.IsObject() {
		return false
	}
	if spec.Get("from").String() != "" {
		return true
	}
	k := spec.Get("const")
	return k.Exists() && k.Raw != "null"
}

// paramPath turns the array indexes of a concrete path into "[]":
// lines.0.goodsCode → lines[].goodsCode.
func paramPath(concrete string) string {
	if !strings.ContainsAny(concrete, "0123456789") {
		return concrete
	}
	parts := strings.Split(concrete, ".")
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		if isIndex(p) && len(out) > 0 {
			out[len(out)-1] += "[]"
			continue
		}
		out = append(out, p)
	}
	return strings.Join(out, ".")
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
