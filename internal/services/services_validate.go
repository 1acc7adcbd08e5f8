package services

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/jsonschema"
	"github.com/tidwall/gjson"
)

// Validate is the schema validation primitive: it validates doc (a missing
// document as null) against the JSON Schema text schema and encodes the
// outcome for a guest (docs/ABI.md, "validate"):
//
//   - empty: the document is valid;
//   - abi.ValidateSchemaError ('S') followed by the message (UTF-8): the schema does not compile;
//   - abi.ValidateProblems ('E') followed by one record per problem, each three fields — path,
//     keyword, message — and each field a 4-byte little-endian length and
//     that many bytes of UTF-8.
//
// Fields are length-prefixed, so any byte may appear in them. Inputs are
// bounded by jsonschema (MaxSchemaBytes, MaxSchemaNodes, MaxDocBytes,
// MaxDepth); compiled schemas live in jsonschema.Shared. The compile and the
// validation are charged to ctx's deadline: when ctx ends first Validate
// returns an error wrapping ctx's and no encoding.
func Validate(ctx context.Context, schema string, doc gjson.Result) ([]byte, error) {
	return ValidateIn(ctx, schema, doc, false)
}

// ValidateIn is Validate where kept says the schema's and the document's
// bytes outlive the call unchanged, so the call's memo (WithValidated)
// keeps them without a copy.
func ValidateIn(ctx context.Context, schema string, doc gjson.Result, kept bool) ([]byte, error) {
	s, err := jsonschema.Shared.GetContext(ctx, schema)
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("services: validate: %w", err)
		}
		return append([]byte{abi.ValidateSchemaError}, err.Error()...), nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("services: validate: %w", err)
	}
	raw := doc.Raw
	if !doc.Exists() {
		raw = "null"
	}
	if ValidBefore(ctx, schema, raw) {
		return nil, nil
	}
	errs := s.ValidateString(raw)
	if len(errs) == 0 {
		markValid(ctx, schema, raw, kept)
		return nil, nil
	}
	n := 1
	for _, e := range errs {
		n += 12 + len(e.Path) + len(e.Keyword) + len(e.Message)
	}
	out := make([]byte, 1, n)
	out[0] = abi.ValidateProblems
	for _, e := range errs {
		out = appendField(out, e.Path)
		out = appendField(out, e.Keyword)
		out = appendField(out, e.Message)
	}
	return out, nil
}

func appendField(out []byte, s string) []byte {
	out = binary.LittleEndian.AppendUint32(out, uint32(len(s)))
	return append(out, s...)
}
