package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The plugin instance keys: the instance budget of the process and the idle
// time after which a tenant's instances are closed (host.Options'
// MaxInstances, MaxInstanceBytes and InstanceIdle).
const (
	keyInstanceIdle     = "plugin-instance-idle"
	keyMaxInstances     = "plugin-max-instances"
	keyMaxInstanceBytes = "plugin-max-instance-bytes"
)

// instanceKeys are the values of the plugin instance keys; bytes is read
// from bytesRaw by validateInstances.
type instanceKeys struct {
	Idle     time.Duration
	Max      int
	BytesRaw string
	bytes    int64
}

// defaultInstanceKeys: idle instances are closed after two minutes; the
// budget holds 256 instances and a sixteenth of the machine's memory, at
// least 128 MiB and at most 384 MiB of linear memory (with the Go heap an
// instance holds on the host, about 6 MB an instance in all).
func defaultInstanceKeys() instanceKeys {
	return instanceKeys{Idle: 2 * time.Minute, Max: 256, BytesRaw: strconv.FormatInt(defaultInstanceBytes(), 10)}
}

func defaultInstanceBytes() int64 {
	const lo, hi = 128 << 20, 384 << 20
	return min(max(machineMemory()/16, lo), hi)
}

// instanceSettings are the plugin instance keys' settings, in usage order.
func (c *serveConfig) instanceSettings() []setting {
	k := &c.instances
	return []setting{
		{name: keyInstanceIdle, dur: &k.Idle},
		{name: keyMaxInstances, integer: &k.Max},
		{name: keyMaxInstanceBytes, str: &k.BytesRaw},
	}
}

// validateInstances reads and checks the plugin instance keys.
func (c *serveConfig) validateInstances(bad func(key, format string, a ...any) error) error {
	k := &c.instances
	if k.Idle < 0 {
		return bad(keyInstanceIdle, "must not be negative (0 keeps idle instances)")
	}
	if k.Max < 0 {
		return bad(keyMaxInstances, "must not be negative (0 turns the count off)")
	}
	n, err := parseBytes(k.BytesRaw)
	if err != nil {
		return bad(keyMaxInstanceBytes, "%v", err)
	}
	k.bytes = n
	return nil
}

// parseBytes reads a size: bytes, or a number with KiB, MiB or GiB.
func parseBytes(s string) (int64, error) {
	num, unit := s, int64(1)
	for _, u := range []struct {
		suffix string
		n      int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if strings.HasSuffix(s, u.suffix) {
			num, unit = strings.TrimSuffix(s, u.suffix), u.n
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a size: bytes, or a whole number of KiB, MiB or GiB (0 turns the bound off)", s)
	}
	if n > (1<<62)/unit {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n * unit, nil
}
