package env

import (
	"errors"
	"testing"
	"time"
)

func noDatabase(string) (*time.Location, error) { return nil, errors.New("no zone database") }

func TestLookupZone(t *testing.T) {
	t.Parallel()
	at := time.Date(2024, 7, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name, zone string
		load       func(string) (*time.Location, error)
		offset     int // seconds east of UTC at `at`
		err        bool
	}{
		{"Shanghai without a zone database", "Asia/Shanghai", noDatabase, 8 * 3600, false},
		{"Kolkata half hour", "Asia/Kolkata", noDatabase, 5*3600 + 1800, false},
		{"UTC", "UTC", noDatabase, 0, false},
		{"plain offset", "+08:00", noDatabase, 8 * 3600, false},
		{"compact offset", "-0330", noDatabase, -(3*3600 + 1800), false},
		{"UTC hours", "UTC+8", noDatabase, 8 * 3600, false},
		{"GMT minutes", "GMT-05:30", noDatabase, -(5*3600 + 1800), false},
		{"DST zone without a database", "Europe/Berlin", noDatabase, 0, true},
		{"DST zone from a database", "Europe/Berlin", func(string) (*time.Location, error) { return time.FixedZone("CEST", 7200), nil }, 7200, false},
		{"table before the database", "Asia/Shanghai", func(string) (*time.Location, error) { return time.FixedZone("LMT", 29143), nil }, 8 * 3600, false},
		{"offset out of range", "+15:00", noDatabase, 0, true},
		{"bad minutes", "+08:7", noDatabase, 0, true},
		{"Local is refused", "Local", time.LoadLocation, 0, true},
		{"garbage", "utc+8", noDatabase, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			loc, err := lookupZone(tt.zone, tt.load)
			if tt.err {
				if !errors.Is(err, errZone) {
					t.Fatalf("got %v, %v; want errZone", loc, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, off := at.In(loc).Zone(); off != tt.offset {
				t.Fatalf("offset %d, want %d", off, tt.offset)
			}
		})
	}
}

func TestCompilePattern(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src, bad string
		hasDate        bool
	}{
		{"default", "yyyy-MM-dd HH:mm:ss", "", true},
		{"quoted letters", "yyyy-MM-dd'T'HH 'o''clock'", "", true},
		{"time only", "HH:mm", "", false},
		{"three-letter year", "yyy", "yyy", false},
		{"month names", "MMM", "MMM", false},
		{"unterminated quote", "yyyy 'at", "'at", false},
		{"zone name", "HH z", "z", false},
		{"empty", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, bad := compilePattern(tt.src)
			if tt.src == "" {
				if p != nil {
					t.Fatalf("empty pattern compiled")
				}
				return
			}
			if bad != tt.bad {
				t.Fatalf("bad %q, want %q", bad, tt.bad)
			}
			if bad == "" && p.hasDate != tt.hasDate {
				t.Fatalf("hasDate %v, want %v", p.hasDate, tt.hasDate)
			}
		})
	}
}

func TestPatternRoundTrip(t *testing.T) {
	t.Parallel()
	loc := time.FixedZone("", 8*3600)
	at := time.Date(2024, 12, 9, 21, 7, 5, 42e6, loc)
	for _, src := range append([]string{"d/M/yy h:m:s a", "EEEE, yyyy年M月d日 HH点mm分", "EEE yyyyMMddHHmmssSSS"}, DefaultInputPatterns...) {
		t.Run(src, func(t *testing.T) {
			t.Parallel()
			p, bad := compilePattern(src)
			if bad != "" {
				t.Fatal(bad)
			}
			s := p.format(at)
			back, ok := p.parse(s, loc)
			if !ok {
				t.Fatalf("%q does not parse back", s)
			}
			if s2 := p.format(back); s2 != s {
				t.Fatalf("round trip %q → %q", s, s2)
			}
		})
	}
}
