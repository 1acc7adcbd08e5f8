package env

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/agentwarden/warden/abi"
)

var addDatetimeSpec = abi.ToolSpec{
	Name: ToolAddDatetime,
	Description: "Adds amount units (negative to subtract) to a date-time and returns it in the form base was written in " +
		"(yyyy-MM-dd HH:mm:ss when base has no time of day and the unit is smaller than a day). " +
		"MONTH and YEAR keep the day of month, clamped to the month's last day (2024-01-31 + 1 MONTH = 2024-02-29).",
	InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["base","amount"],"properties":{` +
		`"base":{"type":"string","description":"date-time such as 2024-05-01 13:30:00 or 2024-05-01"},` +
		`"amount":{"type":"integer","description":"how many units to add; negative subtracts"},` +
		`"unit":{"type":"string","enum":["SECOND","MINUTE","HOUR","DAY","WEEK","MONTH","YEAR"],"default":"DAY"}}}`),
}

// maxSpanSeconds bounds amount × unit so the result stays within the years
// 0001–9999 without integer overflow.
const maxSpanSeconds = 10000 * 366 * 86400

func addDatetime(x *call) {
	amount, _ := x.integer("amount", true, -maxSafe, maxSafe)
	unit, _ := x.enum("unit", units, "DAY")
	if x.rejected() {
		return
	}
	loc, _, ok := x.location()
	if !ok {
		return
	}
	base, p, _ := x.datetimeArg("base", nil, loc)
	if x.rejected() {
		return
	}
	var t time.Time
	ok = true
	switch unit {
	case "MONTH":
		t, ok = addMonths(base, amount)
	case "YEAR":
		if amount > 10000 || amount < -10000 {
			ok = false
		} else {
			t, ok = addMonths(base, amount*12)
		}
	case "DAY", "WEEK":
		days := amount * unitSeconds[unit] / 86400
		if days > maxSpanSeconds/86400 || days < -maxSpanSeconds/86400 {
			ok = false
		} else {
			t = base.AddDate(0, 0, int(days)) // keeps the wall clock, as java.time's plusDays
		}
	default:
		s := unitSeconds[unit]
		if amount > maxSpanSeconds/s || amount < -maxSpanSeconds/s {
			ok = false
		} else {
			t = base.Add(time.Duration(amount*s) * time.Second)
		}
	}
	if !ok || !inRange(t) {
		x.bad("amount", "结果超出 0001–9999 年", "the result falls outside the years 0001-9999")
		x.rejected()
		return
	}
	if !p.hasTime && unitSeconds[unit] > 0 && unitSeconds[unit] < 86400 {
		p = defaultOutput
	}
	s := p.format(t)
	n := strconv.FormatInt(amount, 10)
	x.c.Success(x.text("结果："+s+"（"+n+" "+unitZH[unit]+"）", "result: "+s+" ("+n+" "+unitName(x, unit)+")"),
		newObject().str("result", s).bytes())
}
