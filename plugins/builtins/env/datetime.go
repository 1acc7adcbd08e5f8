package env

import (
	"strings"
	"time"
)

// Units of add_datetime and diff_datetime (case-sensitive, like the spec's
// enums); DAY is the default.
var units = []string{"SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "YEAR"}

var unitSeconds = map[string]int64{"SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400, "WEEK": 7 * 86400}

var unitZH = map[string]string{"SECOND": "秒", "MINUTE": "分钟", "HOUR": "小时", "DAY": "天", "WEEK": "周", "MONTH": "个月", "YEAR": "年"}

var (
	weekdayZH = [7]string{"星期日", "星期一", "星期二", "星期三", "星期四", "星期五", "星期六"}
	weekdayEN = weekLong
)

// isoWeekday is 1 for Monday … 7 for Sunday.
func isoWeekday(t time.Time) int64 {
	if t.Weekday() == time.Sunday {
		return 7
	}
	return int64(t.Weekday())
}

func (x *call) weekdayName(t time.Time) string {
	if x.en() {
		return weekdayEN[t.Weekday()]
	}
	return weekdayZH[t.Weekday()]
}

// patternArg reads an optional pattern argument.
func (x *call) patternArg(field string, forInput bool) (*pattern, bool) {
	s, ok := x.str(field, false)
	if !ok {
		return nil, !x.c.Has("args."+field) || x.c.Get("args."+field).Type == 0
	}
	p, bad := compilePattern(s)
	if bad != "" {
		x.bad(field, "不支持的格式 \""+bad+"\"；可用格式符 "+patternLetters+"，字面文字用单引号括起",
			"unsupported \""+bad+"\"; use the letters "+patternLetters+" and quote literal text in single quotes")
		return nil, false
	}
	if forInput && !p.hasDate {
		x.bad(field, "读取日期的格式须包含年、月、日（yyyy、MM、dd）", "a pattern that reads a date must contain year, month and day (yyyy, MM, dd)")
		return nil, false
	}
	return p, true
}

const patternLetters = "yyyy yy MM M dd d HH H hh h mm m ss s SSS a EEE EEEE XXX"

// datetimeArg reads a required date-time argument with p, or with the
// default patterns when p is nil; it returns the pattern that matched.
func (x *call) datetimeArg(field string, p *pattern, loc *time.Location) (time.Time, *pattern, bool) {
	s, ok := x.str(field, true)
	if !ok {
		return time.Time{}, nil, false
	}
	if p != nil {
		if t, ok := p.parse(s, loc); ok {
			return t, p, true
		}
		x.bad(field, quote(s)+" 不符合格式 "+p.src+" 或不是有效日期", quote(s)+" does not match the pattern "+p.src+" or is not a valid date")
		return time.Time{}, nil, false
	}
	for _, d := range defaultPatterns {
		if t, ok := d.parse(s, loc); ok {
			return t, d, true
		}
	}
	x.bad(field, quote(s)+" 不是可识别的日期时间；可用格式如 2024-05-01 13:30:00、2024-05-01、2024-05-01T13:30:00+08:00",
		quote(s)+" is not a recognised date-time; use a form like 2024-05-01 13:30:00, 2024-05-01 or 2024-05-01T13:30:00+08:00")
	return time.Time{}, nil, false
}

func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return string(appendString(nil, s))
}

// inRange reports whether t can be written with a 4-digit year.
func inRange(t time.Time) bool { return t.Year() >= 1 && t.Year() <= 9999 }

// addMonths adds n calendar months, clamping the day to the month's last
// day as java.time does (2024-01-31 + 1 MONTH = 2024-02-29).
func addMonths(t time.Time, n int64) (time.Time, bool) {
	y, m, d := t.Date()
	total := int64(y)*12 + int64(m) - 1 + n
	if total < 12 || total >= 10000*12 {
		return time.Time{}, false
	}
	ny, nm := int(total/12), time.Month(total%12+1)
	if last := daysIn(ny, nm); d > last {
		d = last
	}
	hh, mm, ss := t.Clock()
	return time.Date(ny, nm, d, hh, mm, ss, t.Nanosecond(), t.Location()), true
}

func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// monthsBetween counts whole calendar months from a to b, truncated toward
// zero, as java.time's ChronoUnit.MONTHS.between does.
func monthsBetween(a, b time.Time) int64 {
	ay, am, _ := a.Date()
	by, bm, _ := b.Date()
	n := int64(by*12+int(bm)) - int64(ay*12+int(am))
	ra, rb := withinMonth(a), withinMonth(b)
	switch {
	case n > 0 && rb < ra:
		n--
	case n < 0 && rb > ra:
		n++
	}
	return n
}

// withinMonth is the time since the start of t's month, as a comparable key.
func withinMonth(t time.Time) int64 {
	h, m, s := t.Clock()
	return ((int64(t.Day())*24+int64(h))*60+int64(m))*60*1e9 + int64(s)*1e9 + int64(t.Nanosecond())
}

func unitName(x *call, unit string) string {
	if x.en() {
		return strings.ToLower(unit) + "(s)"
	}
	return unitZH[unit]
}
