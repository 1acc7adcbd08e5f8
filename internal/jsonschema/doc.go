// Package jsonschema validates JSON documents against the JSON Schema subset
// that tool definitions use (TOOL_USE_RELIABILITY §1.3): parameter objects
// with typed properties, required names, additionalProperties: false, and
// value constraints. It is small and allocation-free on valid documents, uses
// only the standard library and gjson, and builds for GOOS=wasip1 so guard
// plugins can run it.
//
// Compile a schema once, then validate many documents:
//
//	s, err := jsonschema.Compile(toolParams)
//	...
//	for _, e := range s.Validate(args) {
//		fmt.Println(e) // "count: 12 is greater than the maximum 10"
//	}
//
// Validation reports every problem, each with a dotted path ("lines.0.sku",
// "" for the root), the failing keyword and a short English message, in a
// deterministic order.
//
// # Supported keywords
//
//   - type: a name or an array of names among object, array, string,
//     integer, number, boolean, null. An integer is a number without a
//     fractional part (2.0 is an integer). When type fails, no other keyword
//     of that schema is reported for the value.
//   - properties, required, additionalProperties (true, false or a schema).
//     A name listed in required but not in properties must be present and is
//     still subject to additionalProperties. A document object that repeats a
//     key of properties is rejected (keyword "properties"), because consumers
//     disagree on which copy wins.
//   - items (a single schema; the tuple form is rejected), minItems, maxItems.
//   - enum and const, with deep JSON equality: numbers compare numerically
//     (1 equals 1.0), object key order is ignored.
//   - minimum, maximum, exclusiveMinimum, exclusiveMaximum; the numeric form,
//     and also the draft-4 boolean form of the exclusive keywords.
//   - minLength, maxLength, counted in Unicode code points.
//   - pattern: a Go RE2 expression, unanchored as in JSON Schema.
//   - format: date-time (RFC 3339), date (RFC 3339 full-date), email
//     (dot-atom local part @ host name), uuid (8-4-4-4-12 hex), uri (RFC 3986
//     absolute URI, checked character by character). Other formats are a
//     compile error, so a typo cannot silently disable a check.
//   - allOf (every subschema), anyOf (at least one), oneOf (exactly one).
//     Errors inside allOf are reported as they are; anyOf and oneOf report
//     one error for the whole value.
//   - Boolean subschemas: true accepts everything, false rejects everything.
//
// Annotations (title, description, default, examples, $schema, $id,
// nullable, ...) and any other unknown keyword are ignored, except $ref,
// which is a compile error: ignoring it would silently accept anything.
//
// Numbers are compared as float64, so bounds beyond 2^53 are approximate.
//
// Patterns pull the regexp package into the binary. Building with the tag
// jsonschema_nopattern leaves it out; schemas that use pattern then fail to
// compile with [ErrPattern].
package jsonschema
