// Package env is the builtin plugin that provides the eight builtin_env_*
// tools of CONTRACT_SPEC §12: the current time, UUIDs, date formatting and
// arithmetic, weekdays, random integers and hashes.
//
// The clock and randomness come only from the host (capabilities clock and
// random), so a host with a fixed clock and random source, or the native
// runner with guest.WithClock, gets exact outputs.
//
// # Date-time patterns
//
// Patterns follow the Java DateTimeFormatter convention the spec's tools
// came from. Supported letters (a run of the same letter is one field):
//
//	yyyy  4-digit year          yy   2-digit year (2000-2099 when parsing)
//	MM    month 01-12           M    month 1-12
//	dd    day 01-31             d    day 1-31
//	HH    hour 00-23            H    hour 0-23
//	hh    hour 01-12            h    hour 1-12 (with a)
//	mm    minute 00-59          m    minute 0-59
//	ss    second 00-59          s    second 0-59
//	SSS   milliseconds          a    AM/PM (上午/下午 accepted when parsing)
//	EEE   Mon…Sun               EEEE Monday…Sunday
//	XXX   offset +08:00, Z for UTC
//
// Any other ASCII letter is an error; text in single quotes is literal
// ('T'); two single quotes in a row stand for one. Everything else (-, :, /, spaces, 年月日, …) is
// literal. A pattern used to read a date must contain yyyy (or yy), MM (or
// M) and dd (or d); missing time fields are zero.
//
// Without inputPattern a date-time is read in one of DefaultInputPatterns,
// tried in order. Without outputPattern it is written as
// DefaultOutputPattern. A value with an offset (XXX) is converted to the
// configured time zone; a value without one is read in it.
//
// # Time zone
//
// The config key timezone names the zone (default Asia/Shanghai): a fixed
// offset ("+08:00", "UTC+8", "GMT-05:30"), or an IANA name. The wasm build
// carries no time zone database (the sandbox has no files and embedding
// one costs 450 KB), so IANA names of zones without daylight saving time
// resolve from a built-in table of fixed offsets (FixedZones) in both
// builds, which keeps the native and wasm builds byte-identical. Other IANA
// names work only where the Go runtime finds a zone database (the native
// build); in wasm they fail with TOOL_ERROR and a hint to configure an
// offset.
//
// # Errors
//
// An argument the model could have got right (missing, wrong type, not in
// the enum, not matching the pattern, out of range) is REJECTED with
// ARG_REJECTED, a reason naming each failing field and the NEXT_FIX_ARGS
// step. Anything else (an unusable time zone configuration) is FAILED with
// TOOL_ERROR.
package env

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/plugins/builtins/internal/args"
	"github.com/tidwall/gjson"
)

// The tools this plugin provides.
const (
	ToolCurrentDatetime = "builtin_env_current_datetime"
	ToolGenerateUUID    = "builtin_env_generate_uuid"
	ToolFormatDatetime  = "builtin_env_format_datetime"
	ToolAddDatetime     = "builtin_env_add_datetime"
	ToolDiffDatetime    = "builtin_env_diff_datetime"
	ToolGetWeekday      = "builtin_env_get_weekday"
	ToolRandomInt       = "builtin_env_random_int"
	ToolHash            = "builtin_env_hash"
)

// DefaultTimezone is the zone used when the config names none.
const DefaultTimezone = "Asia/Shanghai"

const configSchema = `{"type":"object","additionalProperties":false,"properties":{` +
	`"timezone":{"type":"string","minLength":1,"description":"IANA zone name or fixed offset such as +08:00; default Asia/Shanghai"}}}`

// Plugin is the env builtin plugin.
var Plugin = guest.Plugin{
	Manifest: abi.Manifest{
		Name: "builtin.env", Version: "1.0.0", ABI: abi.Version, Role: abi.RoleBuiltin,
		Description:  "environment tools: current time, UUIDs, date formatting and arithmetic, weekdays, random integers, hashes",
		Capabilities: []abi.Capability{abi.CapClock, abi.CapRandom},
		ConfigSchema: json.RawMessage(configSchema),
		Tools: []abi.ToolSpec{
			currentDatetimeSpec, generateUUIDSpec, formatDatetimeSpec, addDatetimeSpec,
			diffDatetimeSpec, getWeekdaySpec, randomIntSpec, hashSpec,
		},
	},
	Handle: handle,
}

func handle(c *guest.Call) {
	if args.Invalid(c) {
		return
	}
	x := &call{c: c, l: c.Locale(), tool: c.Tool()}
	switch x.tool {
	case ToolCurrentDatetime:
		currentDatetime(x)
	case ToolGenerateUUID:
		generateUUID(x)
	case ToolFormatDatetime:
		formatDatetime(x)
	case ToolAddDatetime:
		addDatetime(x)
	case ToolDiffDatetime:
		diffDatetime(x)
	case ToolGetWeekday:
		getWeekday(x)
	case ToolRandomInt:
		randomInt(x)
	case ToolHash:
		hash(x)
	default:
		x.failed("未知工具", "unknown tool")
	}
}

// call carries one decision's locale, tool and the argument problems found
// so far, so every failing field is named in one rejection.
type call struct {
	c        *guest.Call
	l        abi.Locale
	tool     string
	problems []string
}

func (x *call) en() bool { return x.l == abi.LocaleEN }

func (x *call) text(zh, en string) string {
	if x.en() {
		return en
	}
	return zh
}

// bad records a problem with one field.
func (x *call) bad(field, zh, en string) {
	if x.en() {
		x.problems = append(x.problems, field+": "+en)
		return
	}
	x.problems = append(x.problems, field+"："+zh)
}

// rejected reports the recorded problems, if any, as one ARG_REJECTED.
func (x *call) rejected() bool {
	if len(x.problems) == 0 {
		return false
	}
	sep := "；"
	if x.en() {
		sep = "; "
	}
	x.c.Rejected(abi.ArgRejected, abi.ArgRejected.Reason(x.l, "tool", x.tool, "detail", strings.Join(x.problems, sep)),
		abi.NextFixArgs.Text(x.l))
	return true
}

// failed reports a failure the model could not have avoided.
func (x *call) failed(zh, en string) {
	x.c.Failed(abi.ToolError, abi.ToolError.Reason(x.l, "tool", x.tool, "detail", x.text(zh, en)), abi.NextFail.Text(x.l), nil)
}

// str reads a string argument. ok is false when it is absent (a problem
// if required) or not a string (always a problem).
func (x *call) str(field string, required bool) (string, bool) {
	r := x.c.Get("args." + field)
	switch {
	case !r.Exists() || r.Type == gjson.Null:
		if required {
			x.bad(field, "缺少必填参数", "is required")
		}
		return "", false
	case r.Type != gjson.String:
		x.bad(field, "应为字符串", "must be a string")
		return "", false
	}
	return r.Str, true
}

// maxSafe is the largest integer a JSON number carries exactly.
const maxSafe = 1<<53 - 1

// integer reads an integer argument within [lo, hi].
func (x *call) integer(field string, required bool, lo, hi int64) (int64, bool) {
	r := x.c.Get("args." + field)
	if !r.Exists() || r.Type == gjson.Null {
		if required {
			x.bad(field, "缺少必填参数", "is required")
		}
		return 0, false
	}
	f := r.Num
	if r.Type != gjson.Number || f != float64(int64(f)) || f > maxSafe || f < -maxSafe {
		x.bad(field, "应为整数", "must be an integer")
		return 0, false
	}
	v := int64(f)
	if v < lo || v > hi {
		x.bad(field, "应在 "+strconv.FormatInt(lo, 10)+" 到 "+strconv.FormatInt(hi, 10)+" 之间",
			"must be between "+strconv.FormatInt(lo, 10)+" and "+strconv.FormatInt(hi, 10))
		return 0, false
	}
	return v, true
}

// enum reads an optional string argument that must be one of allowed
// (case-sensitive, like every enum of the spec); absent means def.
func (x *call) enum(field string, allowed []string, def string) (string, bool) {
	v, ok := x.str(field, false)
	if !ok {
		if x.c.Has("args."+field) && x.c.Get("args."+field).Type != gjson.Null {
			return "", false
		}
		return def, true
	}
	for _, a := range allowed {
		if v == a {
			return v, true
		}
	}
	x.bad(field, "应为 "+strings.Join(allowed, "、")+" 之一", "must be one of "+strings.Join(allowed, ", "))
	return "", false
}

// location resolves the configured time zone, reporting a failure when it
// cannot.
func (x *call) location() (*time.Location, string, bool) {
	name := x.c.Get("config.timezone").String()
	if name == "" {
		name = DefaultTimezone
	}
	loc, err := resolveZone(name, time.LoadLocation)
	if err != nil {
		x.failed("时区 "+name+" 不可用（本构建没有时区数据库），请在配置中改用固定偏移，如 +08:00",
			"time zone "+name+" is not available (this build has no time zone database); configure a fixed offset such as +08:00")
		return nil, "", false
	}
	return loc, name, true
}

// object builds a small JSON object without reflection.
type object struct{ b []byte }

func newObject() *object { return &object{b: append(make([]byte, 0, 160), '{')} }

func (o *object) key(k string) {
	if len(o.b) > 1 {
		o.b = append(o.b, ',')
	}
	o.b = appendString(o.b, k)
	o.b = append(o.b, ':')
}

func (o *object) str(k, v string) *object {
	o.key(k)
	o.b = appendString(o.b, v)
	return o
}

func (o *object) num(k string, v int64) *object {
	o.key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
	return o
}

func (o *object) bytes() []byte { return append(o.b, '}') }

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	const hexdigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hexdigits[c>>4], hexdigits[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
