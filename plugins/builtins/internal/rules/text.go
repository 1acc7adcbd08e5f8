package rules

import (
	"strings"

	"github.com/agentwarden/warden/abi"
)

// Text is a model-facing text no error code or hint carries, zh-CN first:
// success summaries and the details filled into a code's {detail}.
type Text [2]string

// In fills t's text for locale l with the key/value pairs kv.
func (t Text) In(l abi.Locale, kv ...string) string {
	if l == abi.LocaleEN {
		return abi.Fill(t[1], kv...)
	}
	return abi.Fill(t[0], kv...)
}

// Texts every builtin uses.
var (
	NoState   = Text{"缺少运行态 {view}", "runtime state {view} is missing"}
	ListSep   = Text{"、", ", "}
	ClauseSep = Text{"；", "; "}
	Colon     = Text{"：", ": "}
	None      = Text{"无", "none"}
)

// Text fills t in the call's locale.
func (c *Call) Text(t Text, kv ...string) string { return t.In(c.L, kv...) }

// List joins items with the locale's list separator, or "无"/"none".
func (c *Call) List(items []string) string {
	if len(items) == 0 {
		return c.Text(None)
	}
	return strings.Join(items, c.Text(ListSep))
}

// Clauses joins two next-step texts into one.
func (c *Call) Clauses(a, b string) string { return a + c.Text(ClauseSep) + b }

// ConstantDiffers is the detail for an output whose value is not its
// contract constant.
var ConstantDiffers = Text{"产出 {key} 的值与契约常量不一致", "the value of output {key} differs from the contract constant"}
