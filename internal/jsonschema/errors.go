package jsonschema

import "errors"

// Schema compile errors. Every error returned by [Compile] wraps exactly one
// of them (test with errors.Is); the wrapping text names the schema location.
var (
	// ErrSchemaJSON means the schema is empty or not valid JSON.
	ErrSchemaJSON = errors.New("schema is not valid JSON")
	// ErrNotSchema means the root is not an object, or a subschema is neither an object nor a boolean.
	ErrNotSchema = errors.New("not a schema object")
	// ErrType means "type" is not a JSON type name or a non-empty array of them.
	ErrType = errors.New("invalid type")
	// ErrProperties means "properties" is not an object of schemas.
	ErrProperties = errors.New("invalid properties")
	// ErrRequired means "required" is not an array of strings.
	ErrRequired = errors.New("invalid required")
	// ErrAdditional means "additionalProperties" is neither a boolean nor a schema.
	ErrAdditional = errors.New("invalid additionalProperties")
	// ErrItems means "items" is not a schema (tuple form is not supported).
	ErrItems = errors.New("invalid items")
	// ErrCount means minItems, maxItems, minLength or maxLength is not a non-negative integer.
	ErrCount = errors.New("invalid count")
	// ErrNumber means minimum, maximum, exclusiveMinimum or exclusiveMaximum is not a number.
	ErrNumber = errors.New("invalid number bound")
	// ErrRange means a lower bound is greater than its upper bound, so nothing can validate.
	ErrRange = errors.New("empty range")
	// ErrEnum means "enum" is not a non-empty array.
	ErrEnum = errors.New("invalid enum")
	// ErrPattern means "pattern" is not a string or not a valid RE2 regular expression.
	ErrPattern = errors.New("invalid pattern")
	// ErrFormat means "format" is not a string or names a format this package does not know.
	ErrFormat = errors.New("unknown format")
	// ErrCombinator means allOf, anyOf or oneOf is not a non-empty array of schemas.
	ErrCombinator = errors.New("invalid combinator")
	// ErrDuplicateKey means a schema object repeats a key.
	ErrDuplicateKey = errors.New("duplicate key")
	// ErrUnsupported means the schema uses a construct that cannot be ignored safely, such as $ref.
	ErrUnsupported = errors.New("unsupported keyword")
	// ErrTooDeep means subschemas are nested more than MaxDepth levels.
	ErrTooDeep = errors.New("schema nested too deeply")
)
