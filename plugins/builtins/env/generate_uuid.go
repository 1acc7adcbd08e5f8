package env

import (
	"encoding/hex"
	"encoding/json"

	"github.com/agentwarden/warden/abi"
)

var generateUUIDSpec = abi.ToolSpec{
	Name: ToolGenerateUUID,
	Description: "Generates a random UUID (version 4). Without length it is the 36-character form with dashes; " +
		"with length (1-32) it is the first length hexadecimal digits of the UUID without dashes.",
	InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{` +
		`"length":{"type":"integer","minimum":1,"maximum":32,"description":"number of hex digits, without dashes"}}}`),
}

func generateUUID(x *call) {
	length, hasLength := x.integer("length", false, 1, 32)
	if x.rejected() {
		return
	}
	var u [16]byte
	x.c.Random(u[:])
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	var h [32]byte
	hex.Encode(h[:], u[:])
	var id string
	if hasLength {
		id = string(h[:length])
	} else {
		id = string(h[0:8]) + "-" + string(h[8:12]) + "-" + string(h[12:16]) + "-" + string(h[16:20]) + "-" + string(h[20:32])
	}
	x.c.Success(x.text("UUID："+id, "UUID: "+id), newObject().str("uuid", id).bytes())
}
