package env

import (
	"encoding/json"

	"github.com/agentwarden/warden/abi"
)

var currentDatetimeSpec = abi.ToolSpec{
	Name: ToolCurrentDatetime,
	Description: "Returns the current date and time in the configured time zone " +
		"(datetime as yyyy-MM-dd HH:mm:ss, date, time, zone, offset, ISO weekday 1=Monday, epoch milliseconds).",
	InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
}

func currentDatetime(x *call) {
	loc, zone, ok := x.location()
	if !ok {
		return
	}
	now := x.c.Now().In(loc)
	dt := defaultPatterns[0].format(now)
	_, off := now.Zone()
	data := newObject().
		str("datetime", dt).
		str("date", dt[:10]).
		str("time", dt[11:]).
		str("timezone", zone).
		str("offset", string(appendOffset(nil, off))).
		num("weekday", isoWeekday(now)).
		num("timestamp", now.UnixMilli()).
		bytes()
	x.c.Success(x.text("当前时间："+dt+"（"+zone+"，"+x.weekdayName(now)+"）",
		"current time: "+dt+" ("+zone+", "+x.weekdayName(now)+")"), data)
}
