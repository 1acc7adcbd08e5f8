package argpolicy

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/tidwall/gjson"
)

// The kinds of arguments a model can send.
const (
	KindObject = iota // a JSON object
	KindAbsent        // no arguments at all
	KindOther         // valid JSON of another type
	KindSyntax        // argsText is set: the text is not valid JSON
)

// ArgShape is what the model's arguments are.
type ArgShape struct {
	Kind int
	// Type is the JSON type of KindOther: array, string, number, boolean or
	// null.
	Type string
	// Line, Column (1-based) and Message locate and explain a KindSyntax
	// error: where the decoder stopped, and why.
	Line, Column int
	Message      string
	// Excerpt is a bounded excerpt of the text around a KindSyntax error
	// (abi.SyntaxOf).
	Excerpt string
}

// Shape reads the shape of a request's arguments.
func Shape(req []byte) ArgShape { return ShapeOf(envelopeBytes(req)) }

// Reader reads a gjson path of a request envelope; *guest.Call is one.
type Reader interface {
	Get(path string) gjson.Result
}

// ShapeOf is Shape through a Reader: in the guard, the host reads the two
// fields natively instead of the guest scanning the whole envelope.
func ShapeOf(req Reader) ArgShape {
	if t := req.Get(abi.FieldArgsText); t.Exists() {
		sx := abi.SyntaxOf(t.String())
		if sx.Empty {
			// Only whitespace: no arguments, as when none were sent.
			return ArgShape{Kind: KindAbsent}
		}
		return ArgShape{Kind: KindSyntax, Line: sx.Line, Column: sx.Column, Message: sx.Message, Excerpt: sx.Excerpt}
	}
	if c, ok := req.(*guest.Call); ok { // a type compare, cheaper in wasm than the interface assertion below
		return shapeOfKind(c.Walk(abi.FieldArgs, 0).Kind)
	}
	if w, ok := req.(walker); ok {
		// The kind alone, from the host: the arguments are not copied in.
		return shapeOfKind(w.Walk(abi.FieldArgs, 0).Kind)
	}
	a := req.Get(abi.FieldArgs)
	switch {
	case !a.Exists():
		return ArgShape{Kind: KindAbsent}
	case a.IsObject():
		return ArgShape{Kind: KindObject}
	}
	return ArgShape{Kind: KindOther, Type: jsonType(a)}
}

// walker is a Reader whose host answers a value's kind (guest.Call.Walk).
type walker interface {
	Walk(path string, limit int) guest.Walked
}

// shapeOfKind is the shape of arguments of a walk kind (the arguments
// were found valid JSON: argsText is absent).
func shapeOfKind(k byte) ArgShape {
	switch k {
	case guest.WalkMissing:
		return ArgShape{Kind: KindAbsent}
	case guest.WalkObject:
		return ArgShape{Kind: KindObject}
	case guest.WalkArray:
		return ArgShape{Kind: KindOther, Type: "array"}
	case guest.WalkString:
		return ArgShape{Kind: KindOther, Type: "string"}
	case guest.WalkNumber:
		return ArgShape{Kind: KindOther, Type: "number"}
	case guest.WalkTrue, guest.WalkFalse:
		return ArgShape{Kind: KindOther, Type: "boolean"}
	}
	return ArgShape{Kind: KindOther, Type: "null"}
}

func jsonType(r gjson.Result) string {
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

type envelopeBytes []byte

func (b envelopeBytes) Get(path string) gjson.Result { return gjson.GetBytes(b, path) }
