package jsonschema

import "errors"

// Schema compile errors. Every error returned by [Compile] starts with
// "jsonschema: " and wraps exactly one of them (test with errors.Is); the
// text after it says where and what.
var (
	// ErrSchemaJSON means the schema is empty or not valid JSON.
	ErrSchemaJSON = errors.New("schema is not valid JSON")
	// ErrDuplicateKey means a schema object repeats a key.
	ErrDuplicateKey = errors.New("duplicate key")
	// ErrTooLarge means the schema text is longer than MaxSchemaBytes.
	ErrTooLarge = errors.New("schema too large")
	// ErrTooDeep means the schema nests more than MaxDepth levels.
	ErrTooDeep = errors.New("schema nested too deeply")
	// ErrInvalid means the schema does not conform to its draft's metaschema
	// (a type that is not a JSON type, a negative maxLength, ...).
	ErrInvalid = errors.New("schema does not conform to its draft")
	// ErrRemoteRef means a $ref (or $schema) names a document other than the
	// schema itself. Such references are refused, never fetched.
	ErrRemoteRef = errors.New("remote reference refused")
	// ErrRef means a $ref points into the schema at something that is not there.
	ErrRef = errors.New("unresolved reference")
	// ErrUnsupported means the schema is valid JSON but cannot be compiled
	// for another reason (an unknown draft, a reference cycle, ...).
	ErrUnsupported = errors.New("unsupported schema")
)
