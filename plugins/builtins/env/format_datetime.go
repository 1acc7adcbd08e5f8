package env

import (
	"encoding/json"

	"github.com/agentwarden/warden/abi"
)

var formatDatetimeSpec = abi.ToolSpec{
	Name: ToolFormatDatetime,
	Description: "Rewrites a date-time in another pattern. Patterns use Java letters: yyyy yy MM M dd d HH H hh h mm m ss s SSS a EEE EEEE XXX; " +
		"quote literal text in single quotes. Without inputPattern, forms like 2024-05-01 13:30:00, 2024-05-01 and 2024-05-01T13:30:00+08:00 are read; " +
		"without outputPattern the result is yyyy-MM-dd HH:mm:ss. A value with an offset is converted to the configured time zone.",
	InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["input"],"properties":{` +
		`"input":{"type":"string","description":"the date-time to rewrite"},` +
		`"inputPattern":{"type":"string","description":"pattern of input, e.g. yyyy/MM/dd HH:mm"},` +
		`"outputPattern":{"type":"string","description":"pattern of the result, e.g. yyyy年MM月dd日; default yyyy-MM-dd HH:mm:ss"}}}`),
}

var defaultOutput, _ = compilePattern(DefaultOutputPattern)

func formatDatetime(x *call) {
	in, _ := x.patternArg("inputPattern", true)
	out, _ := x.patternArg("outputPattern", false)
	if x.rejected() {
		return
	}
	loc, _, ok := x.location()
	if !ok {
		return
	}
	t, _, _ := x.datetimeArg("input", in, loc)
	if x.rejected() {
		return
	}
	if out == nil {
		out = defaultOutput
	}
	s := out.format(t)
	x.c.Success(x.text("格式化结果："+s, "formatted: "+s), newObject().str("result", s).bytes())
}
