// Package unitconv is an example third-party builtin: a unit converter
// shipped as a .wasm with its manifest, installed per tenant with
// catalog.Install (see README.md).
//
// It provides two tools. unitconv_convert converts a value between units of
// length, mass, volume and temperature. unitconv_probe exists only to
// demonstrate the sandbox: it tries what a hostile plugin would try (read a
// file, dial a socket, spin forever) and reports what happened, so the
// example's test can show that none of it gets through. A real plugin would
// not ship it.
package unitconv

import (
	"encoding/json"
	"math"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/tidwall/gjson"
)

// Tool names.
const (
	ToolConvert = "unitconv_convert"
	ToolProbe   = "unitconv_probe"
)

// Plugin is the unit converter.
var Plugin = guest.Plugin{
	Manifest: abi.Manifest{
		Name: "acme.unitconv", Version: "1.2.0", ABI: abi.Version, Role: abi.RoleBuiltin,
		Description: "unit conversion for length, mass, volume and temperature",
		Limits:      abi.Limits{TimeoutMs: 500, MemoryPages: 512},
		Tools: []abi.ToolSpec{
			{
				Name:        ToolConvert,
				Description: "Converts value from one unit to another of the same kind. Units: length mm cm m km in ft yd mi; mass mg g kg t oz lb; volume ml l gal; temperature C F K.",
				InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["value","from","to"],"properties":{` +
					`"value":{"type":"number"},"from":{"type":"string","description":"unit symbol, e.g. km"},"to":{"type":"string","description":"unit symbol, e.g. mi"}}}`),
			},
			{
				Name:        ToolProbe,
				Description: "Sandbox demonstration only: tries to read a file, dial a TCP address or spin, and reports what happened.",
				InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["action"],"properties":{` +
					`"action":{"type":"string","enum":["readfile","dial","spin"]},"target":{"type":"string","description":"file path or host:port"}}}`),
			},
		},
	},
	Handle: handle,
}

// unit is a linear unit of a kind: value in base units = v*scale + shift.
type unit struct {
	kind         string
	scale, shift float64
}

var unitTable = map[string]unit{
	"mm": {"length", 0.001, 0}, "cm": {"length", 0.01, 0}, "m": {"length", 1, 0}, "km": {"length", 1000, 0},
	"in": {"length", 0.0254, 0}, "ft": {"length", 0.3048, 0}, "yd": {"length", 0.9144, 0}, "mi": {"length", 1609.344, 0},
	"mg": {"mass", 1e-6, 0}, "g": {"mass", 0.001, 0}, "kg": {"mass", 1, 0}, "t": {"mass", 1000, 0},
	"oz": {"mass", 0.028349523125, 0}, "lb": {"mass", 0.45359237, 0},
	"ml": {"volume", 0.001, 0}, "l": {"volume", 1, 0}, "gal": {"volume", 3.785411784, 0},
	"K": {"temperature", 1, 0}, "C": {"temperature", 1, 273.15}, "F": {"temperature", 5.0 / 9, 273.15 - 32*5.0/9},
}

var unitList = func() string {
	names := make([]string, 0, len(unitTable))
	for n := range unitTable {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, " ")
}()

func handle(c *guest.Call) {
	if t := c.Get(abi.FieldArgsText); t.Exists() && strings.TrimSpace(t.Str) != "" {
		// Broken JSON is said to be broken, not read as missing values.
		l := c.Locale()
		c.Rejected(abi.ArgJSONInvalid, abi.ArgJSONInvalid.Reason(l, "detail", abi.ArgsJSONDetail(l, t.Str)), abi.NextFixArgs.Text(l))
		return
	}
	switch c.Tool() {
	case ToolConvert:
		convert(c)
	case ToolProbe:
		probe(c)
	default:
		l := c.Locale()
		c.Failed(abi.ToolError, abi.ToolError.Reason(l, "tool", c.Tool(), "detail", "unknown tool"), abi.NextFail.Text(l), nil)
	}
}

func text(l abi.Locale, zh, en string) string {
	if l == abi.LocaleEN {
		return en
	}
	return zh
}

func reject(c *guest.Call, detail string) {
	l := c.Locale()
	c.Rejected(abi.ArgRejected, abi.ArgRejected.Reason(l, "tool", c.Tool(), "detail", detail), abi.NextFixArgs.Text(l))
}

func convert(c *guest.Call) {
	l := c.Locale()
	v := c.Get("args.value")
	if v.Type != gjson.Number {
		reject(c, text(l, "value：应为数字", "value: must be a number"))
		return
	}
	from, okFrom := unitTable[c.Get("args.from").String()]
	to, okTo := unitTable[c.Get("args.to").String()]
	switch {
	case !okFrom || !okTo:
		field := "from"
		if okFrom {
			field = "to"
		}
		reject(c, text(l, field+"：未知单位，可用 "+unitList, field+": unknown unit; use one of "+unitList))
		return
	case from.kind != to.kind:
		reject(c, text(l, "to：不能把 "+from.kind+" 换算成 "+to.kind, "to: cannot convert "+from.kind+" to "+to.kind))
		return
	}
	out := ((v.Num*from.scale + from.shift) - to.shift) / to.scale
	if math.IsInf(out, 0) || math.IsNaN(out) {
		reject(c, text(l, "value：超出可换算范围", "value: out of range"))
		return
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(out, 'g', 12, 64), 64)
	s := strconv.FormatFloat(r, 'f', -1, 64)
	in := c.Get("args.value").Raw + " " + c.Get("args.from").String()
	res := s + " " + c.Get("args.to").String()
	c.Success(in+" = "+res, []byte(`{"value":`+s+`,"unit":`+strconv.Quote(c.Get("args.to").String())+`}`))
}

// probe tries what the sandbox must stop. A success would mean the sandbox
// let it through; the expected results are failures with a code and a next
// step, or a timeout the host reports as PLUGIN_TIMEOUT.
func probe(c *guest.Call) {
	l := c.Locale()
	target := c.Get("args.target").String()
	switch c.Get("args.action").String() {
	case "readfile":
		b, err := os.ReadFile(target)
		if err != nil {
			c.Failed(abi.ToolIOError, abi.ToolIOError.Reason(l, "tool", ToolProbe, "detail", err.Error()), abi.NextFail.Text(l), nil)
			return
		}
		c.Success("read "+strconv.Itoa(len(b))+" bytes", nil)
	case "dial":
		conn, err := net.Dial("tcp", target)
		if err != nil {
			c.Failed(abi.ToolUnreachable, abi.ToolUnreachable.Reason(l, "tool", target), abi.NextFail.Text(l), nil)
			return
		}
		_, _ = conn.Write([]byte("hello from the guest\n"))
		_ = conn.Close()
		c.Success("connected to "+target, nil)
	case "spin":
		n := 0
		for {
			n++
		}
	default:
		reject(c, text(l, "action：应为 readfile、dial、spin 之一", "action: must be one of readfile, dial, spin"))
	}
}
