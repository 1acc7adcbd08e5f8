// Package fieldcheck is a small but realistic guard: it checks the model's
// arguments against the tool's contract and the guard's config before the
// call runs. It is the guard the benchmarks run natively and as wasm.
//
// Rules, in order:
//   - the arguments must be a JSON object (ARG_REJECTED);
//   - every parameter the contract lists under args without from/const and
//     with required (default true) must be present and non-empty;
//   - with config.allowed, no other top-level parameter may appear;
//   - with config.maxLength, no string value (at any depth) may be longer.
//
// All failures are reported at once, naming each field.
package fieldcheck

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/tidwall/gjson"
)

// Plugin is the fieldcheck guard.
var Plugin = guest.Plugin{
	Manifest: abi.Manifest{
		Name: "fieldcheck", Version: "1.0.0", ABI: abi.Version, Role: abi.RoleGuard,
		Description: "checks required, allowed and over-long arguments",
		Phases:      []abi.Phase{abi.PhaseBefore},
		ConfigSchema: []byte(`{"type":"object","additionalProperties":false,"properties":{` +
			`"allowed":{"type":"array","items":{"type":"string"}},` +
			`"maxLength":{"type":"integer","minimum":1}}}`),
	},
	Handle: handle,
}

func handle(c *guest.Call) {
	args := c.Bound()
	l := c.Locale()
	if !args.IsObject() {
		c.Rejected(abi.ArgRejected, abi.ArgRejected.Reason(l, "tool", c.Tool(), "detail", notObject(l)), abi.NextFixArgs.Text(l))
		return
	}
	var problems []string
	c.Contract().Get("args").ForEach(func(path, spec gjson.Result) bool {
		p := path.String()
		if strings.Contains(p, "[]") || spec.Get("from").String() != "" || spec.Get("const").Exists() {
			return true
		}
		if r := spec.Get("required"); r.Exists() && !r.Bool() {
			return true
		}
		if v := args.Get(escape(p)); !v.Exists() || v.Type == gjson.Null || (v.Type == gjson.String && v.Str == "") {
			problems = append(problems, missing(l, p))
		}
		return true
	})
	cfg := c.Config()
	if allowed := cfg.Get("allowed"); allowed.IsArray() {
		names := allowed.Array()
		args.ForEach(func(k, _ gjson.Result) bool {
			for _, a := range names {
				if a.Str == k.Str {
					return true
				}
			}
			problems = append(problems, notAllowed(l, k.Str))
			return true
		})
	}
	if max := int(cfg.Get("maxLength").Int()); max > 0 {
		walk(args, "", func(path string, v gjson.Result) {
			if v.Type == gjson.String && utf8.RuneCountInString(v.Str) > max {
				problems = append(problems, tooLong(l, path, max))
			}
		})
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		sep := "；"
		if l == abi.LocaleEN {
			sep = "; "
		}
		c.Rejected(abi.ArgRejected, abi.ArgRejected.Reason(l, "tool", c.Tool(), "detail", strings.Join(problems, sep)), abi.NextFixArgs.Text(l))
		return
	}
	c.Pass(nil)
}

func walk(v gjson.Result, path string, fn func(string, gjson.Result)) {
	switch {
	case v.IsObject():
		v.ForEach(func(k, child gjson.Result) bool {
			walk(child, join(path, k.Str), fn)
			return true
		})
	case v.IsArray():
		i := 0
		v.ForEach(func(_, child gjson.Result) bool {
			walk(child, join(path, strconv.Itoa(i)), fn)
			i++
			return true
		})
	default:
		fn(path, v)
	}
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

// escape quotes gjson's wildcard and modifier characters in a contract path.
func escape(path string) string {
	if !strings.ContainsAny(path, `*?#|@\`) {
		return path
	}
	b := make([]byte, 0, len(path)+4)
	for i := 0; i < len(path); i++ {
		switch path[i] {
		case '*', '?', '#', '|', '@', '\\':
			b = append(b, '\\')
		}
		b = append(b, path[i])
	}
	return string(b)
}

func notObject(l abi.Locale) string {
	if l == abi.LocaleEN {
		return "arguments are not an object"
	}
	return "参数不是对象"
}

func missing(l abi.Locale, p string) string {
	if l == abi.LocaleEN {
		return "missing required parameter [" + p + "]"
	}
	return "缺少必填参数 [" + p + "]"
}

func notAllowed(l abi.Locale, p string) string {
	if l == abi.LocaleEN {
		return "parameter [" + p + "] is not allowed"
	}
	return "参数 [" + p + "] 不在允许范围内"
}

func tooLong(l abi.Locale, p string, max int) string {
	if l == abi.LocaleEN {
		return "parameter [" + p + "] is longer than " + strconv.Itoa(max)
	}
	return "参数 [" + p + "] 超过 " + strconv.Itoa(max) + " 个字符"
}
