// Package jsonschema validates JSON documents against JSON Schema for the
// host's validate service (tool input and output schemas, plugin config
// schemas). It wraps github.com/santhosh-tekuri/jsonschema/v6, which
// implements drafts 4, 6, 7, 2019-09 and 2020-12 in full, and adds what a
// sandboxed host needs: bounded inputs, references that never leave the
// document, a byte-bounded cache, and messages a model can act on.
//
// Compile a schema once, then validate many documents:
//
//	s, err := jsonschema.Compile(toolParams)
//	...
//	for _, e := range s.Validate(args) {
//		fmt.Println(e) // "count: 12 is greater than the maximum 10"
//	}
//
// # Drafts and references
//
// $schema selects the draft; without it a schema is 2020-12, the draft MCP
// names. $ref, $dynamicRef, $defs, definitions, $id and $anchor resolve
// within the document. A reference to any other document (an http URL, a
// file, a relative name such as common.json) is refused with [ErrRemoteRef]
// at compile time, never fetched; a $schema naming an unknown metaschema is
// refused the same way.
//
// # Formats
//
// Formats are asserted in every draft: date-time, date, time, duration,
// email, hostname, ipv4, ipv6, uri, uri-reference, iri, iri-reference,
// uri-template, uuid, json-pointer, relative-json-pointer, regex. Unknown
// formats are ignored, as JSON Schema says.
//
// # Errors
//
// Validation reports every failing field, each with a dotted path
// ("lines.0.sku", "" for the root; for a missing required property the path
// it should have), the failing keyword and a short English message, in a
// deterministic order (see [Schema.Validate]). For anyOf and oneOf, when
// all alternatives but one fail on the value's type, the errors of that one
// are reported (an optional object given with a bad field); when all fail on
// type, one type error lists the allowed types. Within one schema, const,
// enum and format stop further checks of the value at the first failure.
//
// # Bounds
//
// A schema is at most [MaxSchemaBytes] with at most [MaxSchemaNodes]
// objects and booleans; a document at most [MaxDocBytes]; both nest at most
// [MaxDepth] levels. Objects that repeat a key are refused: consumers
// disagree on which copy wins. Compiled schemas are kept in a [Cache]
// bounded in bytes; [Shared] is the one the validate service uses.
//
// Patterns are Go RE2 expressions, unanchored as in JSON Schema.
//
// # The fast path
//
// A schema whose keywords are all among type, properties, required,
// additionalProperties, items, the length, count and number bounds (integer
// bounds), enum and const of strings, pattern, format and the annotations,
// in 2020-12, 2019-09 or draft-07, also gets a fast form when compiled. It
// walks a document's text in place and answers "valid" without decoding the
// document or running the library's validator; a document it is not sure
// of, valid or not, takes the full path, which writes the errors. Answers
// are the same either way.
package jsonschema
