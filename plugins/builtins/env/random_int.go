package env

import (
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"strconv"

	"github.com/agentwarden/warden/abi"
)

var randomIntSpec = abi.ToolSpec{
	Name:        ToolRandomInt,
	Description: "Returns a uniformly random integer between min and max, both included.",
	InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["min","max"],"properties":{` +
		`"min":{"type":"integer","minimum":-9007199254740991,"maximum":9007199254740991},` +
		`"max":{"type":"integer","minimum":-9007199254740991,"maximum":9007199254740991,"description":"not less than min"}}}`),
}

func randomInt(x *call) {
	lo, okLo := x.integer("min", true, -maxSafe, maxSafe)
	hi, okHi := x.integer("max", true, -maxSafe, maxSafe)
	if okLo && okHi && hi < lo {
		x.bad("max", "应不小于 min（"+strconv.FormatInt(lo, 10)+"）", "must not be less than min ("+strconv.FormatInt(lo, 10)+")")
	}
	if x.rejected() {
		return
	}
	// One draw of 128 bits reduced modulo the span: the bias is below
	// 2^-74, and one host call keeps the guest free of a rejection loop.
	var b [16]byte
	x.c.Random(b[:])
	span := uint64(hi-lo) + 1
	v := lo + int64(bits.Rem64(binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:]), span))
	s := strconv.FormatInt(v, 10)
	x.c.Success(x.text("随机整数："+s, "random integer: "+s),
		newObject().num("value", v).num("min", lo).num("max", hi).bytes())
}
