package services

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/tidwall/gjson"
)

func init() {
	Register("contract.argshape", ctArgShape)
}

// ctArgShape tells ArgPolicy what the model's arguments are, in one crossing
// and without a JSON parser in the guest (in is ignored):
//
//   - "O": a JSON object;
//   - "A": absent (the model sent no arguments);
//   - "T" + type: valid JSON of another type (array, string, number,
//     boolean, null);
//   - "J" + line + '\x1f' + column + '\x1f' + message: argsText is set
//     because the text is not valid JSON; where the decoder stopped (1-based)
//     and why.
func ctArgShape(req, _ []byte) ([]byte, error) {
	if t := gjson.GetBytes(req, abi.FieldArgsText); t.Exists() {
		return ctSyntaxDetail(t.String()), nil
	}
	a := gjson.GetBytes(req, abi.FieldArgs)
	switch {
	case !a.Exists():
		return []byte("A"), nil
	case a.IsObject():
		return []byte("O"), nil
	}
	return []byte("T" + ctJSONType(a)), nil
}

func ctJSONType(r gjson.Result) string {
	switch r.Type {
	case gjson.String:
		return "string"
	case gjson.Number:
		return "number"
	case gjson.True, gjson.False:
		return "boolean"
	case gjson.Null:
		return "null"
	}
	if r.IsArray() {
		return "array"
	}
	return "object"
}

// ctSyntaxDetail locates the first syntax error of text.
func ctSyntaxDetail(text string) []byte {
	var v any
	err := json.Unmarshal([]byte(text), &v)
	off := len(text)
	msg := "not valid JSON"
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		// Offset counts the offending byte; point at it, or just past the
		// end when the text stops early.
		off, msg = int(se.Offset)-1, se.Error()
		if strings.HasPrefix(msg, "unexpected end") {
			off = len(text)
		}
	case err != nil:
		msg = err.Error()
	}
	line, col := 1, 1
	for i := 0; i < off && i < len(text); i++ {
		if text[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return []byte("J" + strconv.Itoa(line) + "\x1f" + strconv.Itoa(col) + "\x1f" + msg)
}
