package env

import (
	"encoding/json"
	"strconv"

	"github.com/agentwarden/warden/abi"
)

var diffDatetimeSpec = abi.ToolSpec{
	Name: ToolDiffDatetime,
	Description: "Returns to minus from in whole units, truncated toward zero (negative when to is earlier). " +
		"MONTH and YEAR count whole calendar months and years.",
	InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["from","to"],"properties":{` +
		`"from":{"type":"string","description":"start date-time, e.g. 2024-05-01 or 2024-05-01 13:30:00"},` +
		`"to":{"type":"string","description":"end date-time"},` +
		`"unit":{"type":"string","enum":["SECOND","MINUTE","HOUR","DAY","WEEK","MONTH","YEAR"],"default":"DAY"}}}`),
}

func diffDatetime(x *call) {
	unit, _ := x.enum("unit", units, "DAY")
	if x.rejected() {
		return
	}
	loc, _, ok := x.location()
	if !ok {
		return
	}
	from, _, _ := x.datetimeArg("from", nil, loc)
	to, _, _ := x.datetimeArg("to", nil, loc)
	if x.rejected() {
		return
	}
	var n int64
	switch unit {
	case "MONTH":
		n = monthsBetween(from, to)
	case "YEAR":
		n = monthsBetween(from, to) / 12
	default:
		secs, nanos := to.Unix()-from.Unix(), to.Nanosecond()-from.Nanosecond()
		switch { // truncate toward zero across a sub-second remainder
		case secs > 0 && nanos < 0:
			secs--
		case secs < 0 && nanos > 0:
			secs++
		}
		n = secs / unitSeconds[unit]
	}
	v := strconv.FormatInt(n, 10)
	x.c.Success(x.text("间隔："+v+" "+unitZH[unit], "difference: "+v+" "+unitName(x, unit)),
		newObject().num("diff", n).str("unit", unit).bytes())
}
