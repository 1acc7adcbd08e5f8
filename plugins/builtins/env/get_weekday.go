package env

import (
	"encoding/json"

	"github.com/agentwarden/warden/abi"
)

var getWeekdaySpec = abi.ToolSpec{
	Name:        ToolGetWeekday,
	Description: "Returns the day of the week of a date: weekday 1 (Monday) to 7 (Sunday) and its name.",
	InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["date"],"properties":{` +
		`"date":{"type":"string","description":"date or date-time, e.g. 2024-05-01"}}}`),
}

func getWeekday(x *call) {
	loc, _, ok := x.location()
	if !ok {
		return
	}
	t, _, _ := x.datetimeArg("date", nil, loc)
	if x.rejected() {
		return
	}
	date := t.Format("2006-01-02")
	name := x.weekdayName(t)
	x.c.Success(x.text(date+" 是"+name, date+" is a "+name),
		newObject().str("date", date).num("weekday", isoWeekday(t)).str("name", name).bytes())
}
