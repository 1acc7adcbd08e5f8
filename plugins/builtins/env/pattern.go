package env

import (
	"strconv"
	"strings"
	"time"
)

// DefaultOutputPattern is how a date-time is written when no pattern is given.
const DefaultOutputPattern = "yyyy-MM-dd HH:mm:ss"

// DateOutputPattern is how a date without a time of day is written back.
const DateOutputPattern = "yyyy-MM-dd"

// DefaultInputPatterns are tried in order when no input pattern is given.
var DefaultInputPatterns = []string{
	"yyyy-MM-dd HH:mm:ss",
	"yyyy-MM-dd HH:mm",
	"yyyy-MM-dd",
	"yyyy-MM-dd'T'HH:mm:ss",
	"yyyy-MM-dd'T'HH:mm:ssXXX",
	"yyyy-MM-dd'T'HH:mm:ss.SSSXXX",
	"yyyy-MM-dd HH:mm:ss.SSS",
	"yyyy/MM/dd HH:mm:ss",
	"yyyy/MM/dd",
}

// defaultPatterns are DefaultInputPatterns compiled once.
var defaultPatterns = func() []*pattern {
	out := make([]*pattern, len(DefaultInputPatterns))
	for i, s := range DefaultInputPatterns {
		p, bad := compilePattern(s)
		if bad != "" {
			panic("env: default pattern " + s + ": " + bad)
		}
		out[i] = p
	}
	return out
}()

type field uint8

const (
	fLiteral field = iota
	fYear4
	fYear2
	fMonth2
	fMonth
	fDay2
	fDay
	fHour2
	fHour
	fHour12x2
	fHour12
	fMinute2
	fMinute
	fSecond2
	fSecond
	fMilli
	fAmPm
	fWeekShort
	fWeekLong
	fOffset
)

type token struct {
	f   field
	lit string
}

// pattern is a compiled date-time pattern.
type pattern struct {
	src     string
	toks    []token
	hasDate bool // year, month and day
	hasTime bool // any time-of-day field
}

// letters maps a pattern letter and run length to a field.
func letterField(c byte, n int) (field, bool) {
	switch {
	case c == 'y' && n == 4:
		return fYear4, true
	case c == 'y' && n == 2:
		return fYear2, true
	case c == 'M' && n <= 2:
		return [...]field{fMonth, fMonth2}[n-1], true
	case c == 'd' && n <= 2:
		return [...]field{fDay, fDay2}[n-1], true
	case c == 'H' && n <= 2:
		return [...]field{fHour, fHour2}[n-1], true
	case c == 'h' && n <= 2:
		return [...]field{fHour12, fHour12x2}[n-1], true
	case c == 'm' && n <= 2:
		return [...]field{fMinute, fMinute2}[n-1], true
	case c == 's' && n <= 2:
		return [...]field{fSecond, fSecond2}[n-1], true
	case c == 'S' && n == 3:
		return fMilli, true
	case c == 'a' && n == 1:
		return fAmPm, true
	case c == 'E' && n <= 3:
		return fWeekShort, true
	case c == 'E' && n == 4:
		return fWeekLong, true
	case c == 'X' && n == 3:
		return fOffset, true
	}
	return 0, false
}

// compilePattern parses a pattern; bad is the offending part when it is
// not valid.
func compilePattern(src string) (*pattern, string) {
	p := &pattern{src: src}
	var lit []byte
	flush := func() {
		if len(lit) > 0 {
			p.toks = append(p.toks, token{f: fLiteral, lit: string(lit)})
			lit = lit[:0]
		}
	}
	var y, mo, d bool
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\'':
			if i+1 < len(src) && src[i+1] == '\'' {
				lit = append(lit, '\'')
				i += 2
				continue
			}
			end := strings.IndexByte(src[i+1:], '\'')
			if end < 0 {
				return nil, src[i:]
			}
			lit = append(lit, src[i+1:i+1+end]...)
			i += end + 2
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			n := 1
			for i+n < len(src) && src[i+n] == c {
				n++
			}
			f, ok := letterField(c, n)
			if !ok {
				return nil, src[i : i+n]
			}
			flush()
			p.toks = append(p.toks, token{f: f})
			switch f {
			case fYear4, fYear2:
				y = true
			case fMonth, fMonth2:
				mo = true
			case fDay, fDay2:
				d = true
			case fHour, fHour2, fHour12, fHour12x2, fMinute, fMinute2, fSecond, fSecond2, fMilli:
				p.hasTime = true
			}
			i += n
		default:
			lit = append(lit, c)
			i++
		}
	}
	flush()
	if len(p.toks) == 0 {
		return nil, src
	}
	p.hasDate = y && mo && d
	return p, ""
}

var (
	weekShort = [7]string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}
	weekLong  = [7]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
)

// format writes t with p.
func (p *pattern) format(t time.Time) string {
	b := make([]byte, 0, len(p.src)+8)
	year, month, day := t.Date()
	hour, minute, sec := t.Clock()
	for _, tk := range p.toks {
		switch tk.f {
		case fLiteral:
			b = append(b, tk.lit...)
		case fYear4:
			b = pad(b, year, 4)
		case fYear2:
			b = pad(b, year%100, 2)
		case fMonth2:
			b = pad(b, int(month), 2)
		case fMonth:
			b = strconv.AppendInt(b, int64(month), 10)
		case fDay2:
			b = pad(b, day, 2)
		case fDay:
			b = strconv.AppendInt(b, int64(day), 10)
		case fHour2:
			b = pad(b, hour, 2)
		case fHour:
			b = strconv.AppendInt(b, int64(hour), 10)
		case fHour12x2:
			b = pad(b, hour12(hour), 2)
		case fHour12:
			b = strconv.AppendInt(b, int64(hour12(hour)), 10)
		case fMinute2:
			b = pad(b, minute, 2)
		case fMinute:
			b = strconv.AppendInt(b, int64(minute), 10)
		case fSecond2:
			b = pad(b, sec, 2)
		case fSecond:
			b = strconv.AppendInt(b, int64(sec), 10)
		case fMilli:
			b = pad(b, t.Nanosecond()/1e6, 3)
		case fAmPm:
			if hour < 12 {
				b = append(b, "AM"...)
			} else {
				b = append(b, "PM"...)
			}
		case fWeekShort:
			b = append(b, weekShort[t.Weekday()]...)
		case fWeekLong:
			b = append(b, weekLong[t.Weekday()]...)
		case fOffset:
			_, off := t.Zone()
			b = appendOffset(b, off)
		}
	}
	return string(b)
}

func hour12(h int) int {
	if h%12 == 0 {
		return 12
	}
	return h % 12
}

func pad(b []byte, v, width int) []byte {
	s := strconv.Itoa(v)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

// appendOffset writes an offset as XXX does: Z, or ±hh:mm.
func appendOffset(b []byte, off int) []byte {
	if off == 0 {
		return append(b, 'Z')
	}
	sign := byte('+')
	if off < 0 {
		sign, off = '-', -off
	}
	b = append(b, sign)
	b = pad(b, off/3600, 2)
	b = append(b, ':')
	return pad(b, off/60%60, 2)
}

// parse reads s with p in loc (or in the offset s carries, converted to
// loc). ok is false when s does not match or names an impossible date.
func (p *pattern) parse(s string, loc *time.Location) (time.Time, bool) {
	year, month, day := 0, 0, 0
	hour, minute, sec, milli := 0, 0, 0, 0
	pm, h12, hasOff := -1, false, false
	off := 0
	i := 0
	for _, tk := range p.toks {
		var v, n int
		switch tk.f {
		case fLiteral:
			if !strings.HasPrefix(s[i:], tk.lit) {
				return time.Time{}, false
			}
			i += len(tk.lit)
			continue
		case fYear4:
			v, n = digits(s[i:], 4, 4)
			year = v
		case fYear2:
			v, n = digits(s[i:], 2, 2)
			year = 2000 + v
		case fMonth2, fMonth:
			v, n = digits(s[i:], minWidth(tk.f == fMonth2), 2)
			month = v
		case fDay2, fDay:
			v, n = digits(s[i:], minWidth(tk.f == fDay2), 2)
			day = v
		case fHour2, fHour:
			v, n = digits(s[i:], minWidth(tk.f == fHour2), 2)
			hour = v
		case fHour12x2, fHour12:
			v, n = digits(s[i:], minWidth(tk.f == fHour12x2), 2)
			if v < 1 || v > 12 {
				return time.Time{}, false
			}
			hour, h12 = v%12, true
		case fMinute2, fMinute:
			v, n = digits(s[i:], minWidth(tk.f == fMinute2), 2)
			minute = v
		case fSecond2, fSecond:
			v, n = digits(s[i:], minWidth(tk.f == fSecond2), 2)
			sec = v
		case fMilli:
			v, n = digits(s[i:], 3, 3)
			milli = v
		case fAmPm:
			pm, n = ampm(s[i:])
		case fWeekShort:
			n = name(s[i:], weekShort[:])
		case fWeekLong:
			n = name(s[i:], weekLong[:])
		case fOffset:
			off, n = parseOffset(s[i:])
			hasOff = true
		}
		if n == 0 {
			return time.Time{}, false
		}
		i += n
	}
	if i != len(s) || !p.hasDate {
		return time.Time{}, false
	}
	if pm == 1 && h12 {
		hour += 12
	}
	if month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || sec > 59 || year < 1 {
		return time.Time{}, false
	}
	in := loc
	if hasOff {
		in = time.FixedZone("", off)
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, milli*1e6, in)
	if t.Day() != day || t.Month() != time.Month(month) {
		return time.Time{}, false
	}
	return t.In(loc), true
}

func minWidth(padded bool) int {
	if padded {
		return 2
	}
	return 1
}

// digits reads between lo and hi ASCII digits; n is 0 when fewer than lo.
func digits(s string, lo, hi int) (v, n int) {
	for n < hi && n < len(s) && s[n] >= '0' && s[n] <= '9' {
		v = v*10 + int(s[n]-'0')
		n++
	}
	if n < lo {
		return 0, 0
	}
	return v, n
}

// ampm reads AM/PM (any case) or 上午/下午: pm is 0 or 1.
func ampm(s string) (pm, n int) {
	switch {
	case len(s) >= 2 && strings.EqualFold(s[:2], "AM"):
		return 0, 2
	case len(s) >= 2 && strings.EqualFold(s[:2], "PM"):
		return 1, 2
	case strings.HasPrefix(s, "上午"):
		return 0, len("上午")
	case strings.HasPrefix(s, "下午"):
		return 1, len("下午")
	}
	return -1, 0
}

// name reads one of names (any case).
func name(s string, names []string) int {
	for _, nm := range names {
		if len(s) >= len(nm) && strings.EqualFold(s[:len(nm)], nm) {
			return len(nm)
		}
	}
	return 0
}

// parseOffset reads Z or ±hh:mm; off is in seconds.
func parseOffset(s string) (off, n int) {
	if strings.HasPrefix(s, "Z") {
		return 0, 1
	}
	if len(s) < 6 || (s[0] != '+' && s[0] != '-') || s[3] != ':' {
		return 0, 0
	}
	h, hn := digits(s[1:3], 2, 2)
	m, mn := digits(s[4:6], 2, 2)
	if hn == 0 || mn == 0 || h > 18 || m > 59 {
		return 0, 0
	}
	off = h*3600 + m*60
	if s[0] == '-' {
		off = -off
	}
	return off, 6
}
