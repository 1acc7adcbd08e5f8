package env

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// FixedZones are the IANA zones without daylight saving time (today) that
// resolve to a fixed offset in every build, in seconds east of UTC. They
// are resolved before any zone database, so the native and wasm builds give
// the same answers; dates before a zone's last rule change (Asia/Shanghai
// observed DST in 1986–1991) are read with today's offset.
var FixedZones = map[string]int{
	"UTC": 0, "Etc/UTC": 0, "GMT": 0, "Etc/GMT": 0,
	"Asia/Shanghai": 8 * 3600, "Asia/Chongqing": 8 * 3600, "Asia/Harbin": 8 * 3600, "PRC": 8 * 3600,
	"Asia/Hong_Kong": 8 * 3600, "Asia/Macau": 8 * 3600, "Asia/Taipei": 8 * 3600,
	"Asia/Singapore": 8 * 3600, "Asia/Kuala_Lumpur": 8 * 3600, "Asia/Manila": 8 * 3600, "Australia/Perth": 8 * 3600,
	"Asia/Tokyo": 9 * 3600, "Asia/Seoul": 9 * 3600,
	"Asia/Bangkok": 7 * 3600, "Asia/Ho_Chi_Minh": 7 * 3600, "Asia/Jakarta": 7 * 3600,
	"Asia/Kolkata": 5*3600 + 1800, "Asia/Calcutta": 5*3600 + 1800,
	"Asia/Dubai": 4 * 3600, "Asia/Riyadh": 3 * 3600, "Europe/Moscow": 3 * 3600, "Europe/Istanbul": 3 * 3600,
	"Asia/Urumqi": 6 * 3600,
}

var errZone = errors.New("unknown time zone")

// zoneCache keeps the last resolved zone: resolving an IANA name parses a
// zone file, which is slow inside a guest. It is a pure cache, not state.
var zoneCache struct {
	name string
	loc  *time.Location
}

// resolveZone turns a configured zone into a location: a fixed offset
// ("+08:00", "UTC+8", "GMT-05:30"), a name of FixedZones, or a name the
// zone database behind load knows.
func resolveZone(name string, load func(string) (*time.Location, error)) (*time.Location, error) {
	if zoneCache.loc != nil && zoneCache.name == name {
		return zoneCache.loc, nil
	}
	loc, err := lookupZone(name, load)
	if err != nil {
		return nil, err
	}
	zoneCache.name, zoneCache.loc = name, loc
	return loc, nil
}

func lookupZone(name string, load func(string) (*time.Location, error)) (*time.Location, error) {
	if off, ok := parseFixedOffset(name); ok {
		return time.FixedZone(name, off), nil
	}
	if off, ok := FixedZones[name]; ok {
		return time.FixedZone(name, off), nil
	}
	if name == "Local" || name == "" {
		return nil, errZone
	}
	loc, err := load(name)
	if err != nil {
		return nil, errZone
	}
	return loc, nil
}

// parseFixedOffset reads "+08:00", "-0530", "UTC+8", "GMT-05:30".
func parseFixedOffset(s string) (int, bool) {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "UTC"), "GMT")
	if len(s) < 2 || (s[0] != '+' && s[0] != '-') {
		return 0, false
	}
	sign, body := s[0], s[1:]
	hs, ms := body, ""
	if i := strings.IndexByte(body, ':'); i >= 0 {
		hs, ms = body[:i], body[i+1:]
	} else if len(body) == 4 {
		hs, ms = body[:2], body[2:]
	}
	h, err := strconv.Atoi(hs)
	if err != nil || len(hs) > 2 || h > 14 {
		return 0, false
	}
	m := 0
	if ms != "" {
		if m, err = strconv.Atoi(ms); err != nil || len(ms) != 2 || m > 59 {
			return 0, false
		}
	}
	off := h*3600 + m*60
	if sign == '-' {
		off = -off
	}
	return off, true
}
