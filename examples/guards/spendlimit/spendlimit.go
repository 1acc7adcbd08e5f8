// Package spendlimit is an example tenant guard: a per-call spending limit on
// a payment tool. A tenant attaches it to a skill before the call runs; it
// reads the amount and the currency out of the call's arguments at paths the
// tenant configures and rejects a payment over the tenant's limit for that
// currency, a currency the tenant has no limit for, and an amount that is not
// a positive number. Calls of any other tool pass untouched.
//
// The guard is stateless, like every Warden plugin: everything it decides on
// travels in the one request envelope (the arguments and the tenant's own
// config), so the same decision comes out natively and in wasm, on any pooled
// instance, and in a replay. A daily budget per tenant would need the host's
// ledger and an effect; see the README.
package spendlimit

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/tidwall/gjson"
)

// ConfigSchema is what a tenant's config must match; the host checks it at
// load, so the handler can trust the shape of config.
const ConfigSchema = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["tool", "amountPath", "currencyPath", "limits"],
  "properties": {
    "tool": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$",
      "description": "the payment tool this guard limits; other tools pass"},
    "amountPath": {"type": "string", "minLength": 1,
      "description": "gjson path of the amount in the arguments, e.g. amount or payment.amount"},
    "currencyPath": {"type": "string", "minLength": 1,
      "description": "gjson path of the ISO 4217 currency code in the arguments"},
    "limits": {"type": "object", "additionalProperties": {"type": "number", "exclusiveMinimum": 0},
      "description": "largest amount allowed in one call, by upper-case currency code"}
  }
}`

// Plugin is the spendlimit guard.
var Plugin = guest.Plugin{
	Manifest: abi.Manifest{
		Name: "spendlimit", Version: "1.0.0", ABI: abi.Version, Role: abi.RoleGuard,
		Description:  "rejects a payment over the tenant's per-call limit for its currency",
		Phases:       []abi.Phase{abi.PhaseBefore},
		ConfigSchema: []byte(ConfigSchema),
		Limits:       abi.Limits{TimeoutMs: 200, MemoryPages: 256},
	},
	Handle: handle,
}

func handle(c *guest.Call) {
	tool := c.Tool()
	if tool != c.Get("config.tool").String() {
		c.Pass(nil)
		return
	}
	l := c.Locale()
	doc := abi.FieldArgs
	if c.Has(abi.FieldBound) {
		doc = abi.FieldBound // what the business tool will actually receive
	}
	amountPath := c.Get("config.amountPath").String()
	currencyPath := c.Get("config.currencyPath").String()

	amount := c.Get(doc + "." + amountPath)
	switch {
	case !amount.Exists():
		c.Rejected(abi.ArgRejected, text(l, "付款金额 ["+amountPath+"] 缺失",
			"the payment amount ["+amountPath+"] is missing"), abi.NextFixArgs.Text(l))
		return
	case amount.Type != gjson.Number:
		c.Rejected(abi.ArgRejected, text(l, "付款金额 ["+amountPath+"] 不是数字："+clip(amount.Raw),
			"the payment amount ["+amountPath+"] is not a number: "+clip(amount.Raw)), abi.NextFixArgs.Text(l))
		return
	case amount.Float() <= 0:
		c.Rejected(abi.ArgRejected, text(l, "付款金额 ["+amountPath+"] 必须大于 0："+clip(amount.Raw),
			"the payment amount ["+amountPath+"] must be greater than 0: "+clip(amount.Raw)), abi.NextFixArgs.Text(l))
		return
	}

	cur := c.Get(doc + "." + currencyPath)
	if cur.Type != gjson.String || strings.TrimSpace(cur.Str) == "" {
		c.Rejected(abi.ArgRejected, text(l, "付款币种 ["+currencyPath+"] 缺失或不是字符串",
			"the payment currency ["+currencyPath+"] is missing or not a string"), abi.NextFixArgs.Text(l))
		return
	}
	code := strings.ToUpper(strings.TrimSpace(cur.Str))
	limit := c.Get("config.limits." + guest.Escape(code))
	if !limit.Exists() {
		allowed := allowedCurrencies(c)
		c.Rejected(abi.ArgRejected,
			text(l, "币种 "+clip(code)+" 不在允许付款的币种（"+strings.Join(allowed, "、")+"）之中",
				"currency "+clip(code)+" is not among the currencies allowed for payments ("+strings.Join(allowed, ", ")+")"),
			text(l, "调用 builtin_node_follow_up 请用户改用允许的币种付款；不要自行换算金额",
				"ask the user with builtin_node_follow_up to pay in an allowed currency; do not convert the amount on your own"))
		return
	}
	if a, max := amount.Float(), limit.Float(); a > max {
		as, ms := num(a)+" "+code, num(max)+" "+code
		c.Rejected(abi.ArgRejected,
			text(l, "付款金额 "+as+" 超过单笔上限 "+ms, "the payment of "+as+" is over the per-call limit of "+ms),
			text(l, "调用 builtin_node_follow_up 请用户把付款拆成每笔不超过 "+ms+" 的多笔，或确认一个不超过 "+ms+" 的金额；不要自行修改金额",
				"ask the user with builtin_node_follow_up to split the payment into parts of at most "+ms+
					" or to confirm an amount of at most "+ms+"; do not change the amount on your own"))
		return
	}
	c.Pass(nil)
}

// allowedCurrencies lists the configured currencies in a stable order, so
// the message does not depend on the config's key order.
func allowedCurrencies(c *guest.Call) []string {
	var out []string
	for _, k := range c.Get("config.limits.@keys").Array() {
		out = append(out, k.String())
	}
	sort.Strings(out)
	return out
}

func text(l abi.Locale, zh, en string) string {
	if l == abi.LocaleEN {
		return en
	}
	return zh
}

// num prints an amount the way a person writes it: 5000, 99.5.
func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// clip bounds a value copied from the model's arguments into a message.
func clip(s string) string {
	const max = 40
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
