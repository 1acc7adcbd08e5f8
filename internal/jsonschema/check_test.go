package jsonschema

import (
	"testing"

	"github.com/tidwall/gjson"
)

func TestCheckEncoding(t *testing.T) {
	t.Parallel()
	req := `{"schema":{"type":"object","required":["a"],"properties":{"a":{"type":"string","format":"hostname"},"n":{"maximum":3}}},` +
		`"ok":{"a":"example.com"},"bad":{"a":"-x-","n":4},"remote":{"$ref":"http://example.com/s.json"},"sep":{"properties":{"a\nb":{"type":"string"}}},` +
		`"sepDoc":{"a\nb":1}}`
	for _, tc := range []struct {
		name, schema, doc, want string
	}{
		{"valid", "schema", "ok", ""},
		{"errors", "schema", "bad", "E" + "a\x1fformat\x1f\"-x-\" is not a valid hostname\nn\x1fmaximum\x1f4 is greater than the maximum 3"},
		{"missing document is null", "schema", "absent", "E" + "\x1ftype\x1fexpected object, got null"},
		{"schema error", "remote", "ok", `S` + `jsonschema: remote reference refused: "http://example.com/s.json" is outside the schema; ` +
			`only references into the schema itself (such as #/$defs/Name) are resolved, nothing is fetched`},
		{"separators are cleaned", "sep", "sepDoc", "E" + "a b\x1ftype\x1fexpected string, got number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := string(Check(gjson.Get(req, tc.schema).Raw, gjson.Get(req, tc.doc)))
			if got != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
