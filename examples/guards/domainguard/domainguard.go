// Package domainguard is an example tenant guard: it keeps a website tool
// to the domains a tenant owns. A tenant attaches it to a skill before the
// call runs; it reads the domain from the call's arguments (as bound, when
// earlier guards bound them) and rejects a domain that is neither one of
// the tenant's allowed domains nor a subdomain of one, with a reason and a
// next step of its own. Calls of any other tool pass untouched.
//
// The guard is stateless: the arguments and the tenant's config are all it
// decides on, so the same decision comes out natively and in wasm.
package domainguard

import (
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/tidwall/gjson"
)

// ConfigSchema is what a tenant's config must match; the host checks it at
// load, so a misspelt key or an empty allow-list fails the skill's load,
// never a call.
const ConfigSchema = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["tool", "allowed"],
  "properties": {
    "tool": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$",
      "description": "the tool whose domain this guard checks; other tools pass"},
    "field": {"type": "string", "minLength": 1,
      "description": "gjson path of the domain in the arguments; default domain"},
    "allowed": {"type": "array", "minItems": 1, "uniqueItems": true,
      "items": {"type": "string", "pattern": "^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$"},
      "description": "the tenant's domains; each allows itself and its subdomains"}
  }
}`

// Plugin is the domainguard guard.
var Plugin = guest.Plugin{
	Manifest: abi.Manifest{
		Name: "domainguard", Version: "0.1.0", ABI: abi.Version, Role: abi.RoleGuard,
		Description:  "rejects a website whose domain is not one of the tenant's domains or their subdomains",
		Phases:       []abi.Phase{abi.PhaseBefore},
		ConfigSchema: []byte(ConfigSchema),
		Limits:       abi.Limits{TimeoutMs: 200, MemoryPages: 256},
	},
	Handle: handle,
}

func handle(c *guest.Call) {
	if c.Tool() != c.Get("config.tool").String() {
		c.Pass(nil)
		return
	}
	l := c.Locale()
	field := c.Get("config.field").String()
	if field == "" {
		field = "domain"
	}
	doc := abi.FieldArgs
	if c.Has(abi.FieldBound) {
		doc = abi.FieldBound // what the tool will actually receive
	}
	v := c.Get(doc + "." + field)
	if v.Type != gjson.String || strings.TrimSpace(v.Str) == "" {
		c.Rejected(abi.ArgRejected, text(l, "域名 ["+field+"] 缺失或不是字符串", "the domain ["+field+"] is missing or not a string"),
			abi.NextFixArgs.Text(l))
		return
	}
	domain := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(v.Str)), ".")
	var allowed []string
	for _, a := range c.Get("config.allowed").Array() {
		allowed = append(allowed, a.String())
	}
	sort.Strings(allowed)
	for _, a := range allowed {
		if domain == a || strings.HasSuffix(domain, "."+a) {
			c.Pass(nil)
			return
		}
	}
	zh, en := strings.Join(allowed, "、"), strings.Join(allowed, ", ")
	c.Rejected(abi.ArgRejected,
		text(l, "域名 "+clip(domain)+" 不属于本租户的域名（"+zh+" 及其子域名）",
			"domain "+clip(domain)+" is not one of this tenant's domains ("+en+" and their subdomains)"),
		text(l, "调用 builtin_node_follow_up 请用户改用 "+zh+" 下的域名；不要自行更换域名",
			"ask the user with builtin_node_follow_up for a domain under "+en+"; do not choose another domain yourself"))
}

func text(l abi.Locale, zh, en string) string {
	if l == abi.LocaleEN {
		return en
	}
	return zh
}

// clip bounds a value copied from the model's arguments into a message.
func clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
