// Package guest is the Go SDK for Warden plugin authors.
//
// A plugin is a Plugin value: its manifest and a handler. The handler reads
// the request envelope with gjson paths and reports exactly one result
// through the Call's factories (Success, Failed, Rejected, Deferred) or, for a
// guard, Pass; it may also ask for effects. The host enforces the result
// contract, so a handler that reports nothing, reports twice, or reports a
// non-success without a registered code, a reason and a next step is turned
// into a PLUGIN_CONTRACT_VIOLATION observation.
//
// Put the Plugin in an importable package and serve it from a tiny main
// package built with the standard toolchain:
//
//	//go:build wasip1
//	package main
//
//	import ("github.com/agentwarden/warden/abi/guest"; "example.com/myguard")
//
//	func init() { guest.Serve(myguard.Plugin) }
//	func main() {}
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o myguard.wasm ./cmd/myguard
//
// The same Plugin runs in-process through NewNative, so tests and benchmarks
// can put the identical guard beside its wasm build.
//
// One module can serve several plugins: guest.ServeAll(a, b, …) in place
// of Serve. The host binds the module to one of them per slot by its
// manifest's name (host.SelectPlugin) and selects it in every instance it
// starts, so the plugins share one Go runtime and one compilation while
// each slot keeps instances of its own (docs/ABI.md, "One module, several
// plugins"). Warden's first-party plugins are served this way.
//
// # Decide in the guest, let the host do the heavy primitives
//
// Every rule of a plugin belongs in the guest, so that a new generation of
// the plugin can change it without a new host. The host offers a few
// general primitives (docs/ABI.md) that are cheaper natively: Get and Has
// evaluate a path and copy in only the result, Validate checks a JSON
// Schema, Digest hashes a value's canonical JSON and Hash its raw text
// without copying it in,
// Walk answers a value's size and distinct leaf values in one pass. A
// guest that walks much of the envelope (a tool's contract, a state view)
// reads Raw with gjson itself; the first-party guards do, and memoise what
// they parse from it. Allocations still cost more inside a guest than in the
// host, so keep them out of hot paths.
package guest

import (
	"encoding/binary"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/tidwall/gjson"
)

// Plugin is a guard or builtin: what it declares and how it decides.
type Plugin struct {
	Manifest abi.Manifest
	// Handle is called once per decision. It must report exactly one
	// result through c.
	Handle func(c *Call)
}

// reporter is where a Call's results go: host functions in wasm, an
// abi.Recorder natively.
type reporter interface {
	success(message string, data []byte)
	result(o abi.Outcome, code, reason, next string, data []byte)
	pass(args, facts []byte)
	effect(kind string, payload []byte)
	now() int64
	random(p []byte)
	log(level int32, msg string)
	query(path string) (raw string, ok bool)
	exists(path string) bool
	validate(schemaPath, docPath string) []byte
	digest(path string, out *[DigestSize]byte)
	hash(path string, out *[DigestSize]byte) bool
	walk(path string, limit int) string
	items(path string, limit int) string
	canonical(path string) []byte
	splice(kind string, parts []byte)
	size(path string) int
}

// Call is one decision: the request envelope and the way to answer it.
type Call struct {
	req []byte
	r   reporter
	m   *abi.Manifest
}

// Raw returns the request envelope (JSON, see abi.Request). Do not keep it
// after Handle returns. In wasm an after-phase request's bytes lack the
// response member (docs/ABI.md, "warden_lean_input"): read it with
// Response or Get, which the host answers.
func (c *Call) Raw() []byte { return c.req }

// Get reads a gjson path ("args.title", "lines.#", "args.@keys") of the
// envelope. The path is bounded as the host bounds it (see
// internal/services.CheckPath): at most 512 bytes nested at most 8 levels,
// one '*' per pattern, only the modifiers @this, @keys, @values, @reverse
// and @valid, without arguments; any other path voids the call as a
// contract violation. In wasm the host evaluates the path natively and copies only
// the result in, which is much faster than scanning the envelope inside the
// guest; natively it is gjson on the same bytes, so both agree.
func (c *Call) Get(path string) gjson.Result {
	raw, ok := c.r.query(path)
	if !ok {
		return gjson.Result{}
	}
	return gjson.Parse(raw)
}

// Has reports whether a gjson path of the envelope matches anything,
// without copying the value into the guest.
func (c *Call) Has(path string) bool { return c.r.exists(path) }

// Size is the length of the raw JSON at a gjson path of the envelope, -1
// when the path matches nothing, without copying the value into the guest.
func (c *Call) Size(path string) int { return c.r.size(path) }

// MaxPathBytes is the longest path the host evaluates (docs/ABI.md,
// "Primitives"); a longer one voids the call.
const MaxPathBytes = 512

// DigestSize is the length of a Digest (SHA-256).
const DigestSize = abi.DigestSize

// Digest is the SHA-256 of the canonical JSON (package canonical) of the
// value at a gjson path of the envelope, or of "null" when the path matches
// nothing: Digest("bound") identifies a call's arguments whatever their key
// order and spacing. The path is bounded as Get's. The host computes it
// natively; the value is not copied into the guest.
func (c *Call) Digest(path string) [DigestSize]byte {
	var out [DigestSize]byte
	c.r.digest(path, &out)
	return out
}

// Hash is the SHA-256 of the raw text of the value at a gjson path of the
// envelope, exactly as the envelope holds it (not its canonical form: a
// tool's response hashed as it arrived), and false when the path matches
// nothing. The path is bounded as Get's. The host computes it natively; the
// value is not copied into the guest.
func (c *Call) Hash(path string) ([DigestSize]byte, bool) {
	var out [DigestSize]byte
	ok := c.r.hash(path, &out)
	return out, ok
}

// Canonical is the canonical JSON (package canonical) of the value at a
// gjson path of the envelope, or "null" when the path matches nothing: the
// bytes Digest hashes, computed by the host instead of the guest. The path
// is bounded as Get's.
func (c *Call) Canonical(path string) []byte { return c.r.canonical(path) }

// DigestHex is Digest in lowercase hex, the form state views and effect
// payloads carry (argsDigest, resultDigest).
func (c *Call) DigestHex(path string) string {
	const hexDigits = "0123456789abcdef"
	d := c.Digest(path)
	var out [2 * DigestSize]byte
	for i, b := range d {
		out[2*i], out[2*i+1] = hexDigits[b>>4], hexDigits[b&0xf]
	}
	return string(out[:])
}

// Walk is one pass over the value at a gjson path of the envelope (bounded
// as Get's), done by the host: the value's kind and size, and its distinct
// non-null scalar leaves in document order, each as its text (a string
// unescaped, an integer as written, another number in its shortest decimal
// form, true or false: gjson's String), at most limit of them
// (capped at 10,000; 0 asks for the kind and size only). A guest that would
// count an array's items or collect its leaf values reads them from one
// answer instead of walking the value itself; the value is not copied in.
func (c *Call) Walk(path string, limit int) Walked {
	return parseWalked(c.r.walk(path, limit))
}

// Walked is what Walk answers.
type Walked struct {
	// Kind is the value's kind: WalkMissing when the path matches
	// nothing, else WalkNull, WalkFalse, WalkTrue, WalkNumber, WalkString,
	// WalkArray or WalkObject.
	Kind byte
	// Size is an array's items or an object's members; 0 for a scalar.
	Size int
	// Leaves are the distinct non-null scalar leaves.
	Leaves []string
}

// The kinds of a Walked value (docs/ABI.md, "walk").
const (
	WalkMissing byte = 0
	WalkNull    byte = 'n'
	WalkFalse   byte = 'f'
	WalkTrue    byte = 't'
	WalkNumber  byte = '#'
	WalkString  byte = 's'
	WalkArray   byte = '['
	WalkObject  byte = '{'
)

// le32 reads a 4-byte little-endian length at s[i:].
func le32(s string, i int) int {
	return int(uint32(s[i]) | uint32(s[i+1])<<8 | uint32(s[i+2])<<16 | uint32(s[i+3])<<24)
}

// parseWalked decodes walk's answer; the leaves are substrings of it.
func parseWalked(b string) Walked {
	if len(b) < 9 {
		return Walked{}
	}
	w := Walked{Kind: b[0], Size: le32(b, 1)}
	n := le32(b, 5)
	if n == 0 {
		return w
	}
	// each leaf takes at least its 4-byte length
	w.Leaves = make([]string, 0, min(n, (len(b)-9)/4))
	for i := 9; i+4 <= len(b) && len(w.Leaves) < n; {
		l := le32(b, i)
		i += 4
		if l > len(b)-i {
			break
		}
		w.Leaves = append(w.Leaves, b[i:i+l])
		i += l
	}
	return w
}

// Items lists the items of the value at a gjson path of the envelope
// (bounded as Get's) — an array's items, or the value itself when it is not
// an array —, each with its kind, raw JSON, text and, for an object, its
// members, at most limit of them (capped at 10,000). The host parses the
// value: a guest reading records field by field reads them from one answer
// instead of parsing them itself; keys, raw texts and texts are substrings
// of the answer.
func (c *Call) Items(path string, limit int) Items {
	return parseItems(c.r.items(path, limit))
}

// MaxItems is the most items Call.Items lists.
const MaxItems = 10000

// Items is what Call.Items answers.
type Items struct {
	// Kind is the value's kind (WalkMissing when the path matches nothing).
	Kind byte
	// List are the items.
	List []Item
	// Members holds every item's members, each item's a run of it.
	Members []Member
}

// Item is one item of Items.
type Item struct {
	ItemValue
	// First and N are where the item's members are in Items.Members (N is
	// 0 for an item that is not an object).
	First, N int
}

// Member is one member of an object item.
type Member struct {
	Key string
	ItemValue
}

// ItemValue is a value of Items: its kind (WalkNull … WalkObject), its raw
// JSON as the envelope holds it and its text (a string unescaped, an
// integer as written, another number in its shortest decimal form, true or
// false); Raw and Text are empty for an array or an object, Text for null.
type ItemValue struct {
	Kind      byte
	Raw, Text string
}

// MembersOf are the members of the i-th item.
func (its *Items) MembersOf(i int) []Member {
	it := its.List[i]
	return its.Members[it.First : it.First+it.N]
}

// parseItems decodes the items answer (docs/ABI.md, "items"); a cut or
// corrupted answer ends the list where it stops making sense.
func parseItems(b string) Items {
	if len(b) < 5 {
		return Items{}
	}
	its := Items{Kind: b[0]}
	n := le32(b, 1)
	i := 5
	// an item takes at least 9 bytes, a member 14 (the members grow past
	// a first guess rather than reserving for the most the answer could
	// hold)
	its.List = make([]Item, 0, min(n, len(b)/9))
	its.Members = make([]Member, 0, min(len(b)/14, 256))
	for len(its.List) < n {
		v, next, ok := itemValue(b, i)
		if !ok {
			break
		}
		i = next
		it := Item{ItemValue: v, First: len(its.Members)}
		if v.Kind == WalkObject {
			if i+4 > len(b) {
				break
			}
			m := le32(b, i)
			i += 4
			for range m {
				k, next, ok := lenField(b, i)
				if !ok {
					break
				}
				mv, next, ok := itemValue(b, next)
				if !ok {
					break
				}
				i = next
				its.Members = append(its.Members, Member{Key: k, ItemValue: mv})
			}
			it.N = len(its.Members) - it.First
		}
		its.List = append(its.List, it)
	}
	return its
}

// lenField reads a 4-byte little-endian length at b[i:] and that many
// bytes, and where the next field starts.
func lenField(b string, i int) (string, int, bool) {
	if i+4 > len(b) {
		return "", i, false
	}
	l := le32(b, i)
	i += 4
	if l > len(b)-i {
		return "", i, false
	}
	return b[i : i+l], i + l, true
}

// itemValue reads one value of an items answer: kind, raw, text.
func itemValue(b string, i int) (ItemValue, int, bool) {
	if i >= len(b) {
		return ItemValue{}, i, false
	}
	v := ItemValue{Kind: b[i]}
	raw, i, ok := lenField(b, i+1)
	if !ok {
		return v, i, false
	}
	text, i, ok := lenField(b, i)
	v.Raw, v.Text = raw, text
	return v, i, ok
}

// SchemaError is one field-level problem found by Validate.
type SchemaError struct {
	Path    string // dotted path in the document, "" for its root
	Keyword string // the failing schema keyword ("required", "maximum", …)
	Message string // short English text without the path
}

// Error returns "path: message" (just the message at the root).
func (e SchemaError) Error() string {
	if e.Path == "" {
		return e.Message
	}
	return e.Path + ": " + e.Message
}

// Validate checks the JSON at docPath of the envelope (e.g. "args")
// against the JSON Schema at schemaPath (e.g. "schema") and returns every
// problem; a missing document is checked as null. It returns ErrSchema when
// the schema itself is invalid. The host runs the validator natively.
func (c *Call) Validate(schemaPath, docPath string) ([]SchemaError, error) {
	return decodeCheck(schemaPath, c.r.validate(schemaPath, docPath))
}

// decodeCheck reads the validate primitive's encoding (docs/ABI.md,
// "validate"): empty when valid, abi.ValidateSchemaError + message for a
// schema that does not compile, abi.ValidateProblems + records of three
// fields, each a 4-byte little-endian length and its bytes.
func decodeCheck(schemaPath string, b []byte) ([]SchemaError, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if b[0] == abi.ValidateSchemaError {
		return nil, schemaError(schemaPath, string(b[1:]))
	}
	var out []SchemaError
	rest := b[1:]
	for len(rest) > 0 {
		var f [3]string
		for i := range f {
			if len(rest) < 4 {
				return out, nil
			}
			n := int(binary.LittleEndian.Uint32(rest))
			rest = rest[4:]
			if n > len(rest) {
				return out, nil
			}
			f[i], rest = string(rest[:n]), rest[n:]
		}
		out = append(out, SchemaError{Path: f[0], Keyword: f[1], Message: f[2]})
	}
	return out, nil
}

// Tool is the name of the tool being called.
func (c *Call) Tool() string { return c.Get(abi.FieldTool).String() }

// Phase is the guard phase (empty for builtins).
func (c *Call) Phase() abi.Phase { return abi.Phase(c.Get(abi.FieldPhase).String()) }

// CallID identifies the tool call.
func (c *Call) CallID() string { return c.Get(abi.FieldCallID).String() }

// Args are the arguments as the model gave them.
func (c *Call) Args() gjson.Result { return c.Get(abi.FieldArgs) }

// Bound are the arguments as bound so far by earlier guards; Args when no
// guard rewrote them.
func (c *Call) Bound() gjson.Result {
	if b := c.Get(abi.FieldBound); b.Exists() {
		return b
	}
	return c.Args()
}

// Contract is the skill's contract for this tool.
func (c *Call) Contract() gjson.Result { return c.Get(abi.FieldContract) }

// Config is the plugin's configuration.
func (c *Call) Config() gjson.Result { return c.Get(abi.FieldConfig) }

// State returns a granted state view (absent when not granted). It copies
// the whole view into the guest; prefer Get(StatePath(view, sub)).
func (c *Call) State(view abi.Capability) gjson.Result {
	return c.Get(StatePath(view, ""))
}

// Result is the business tool's observation (after phase).
func (c *Call) Result() gjson.Result { return c.Get(abi.FieldResult) }

// Response is the business tool's raw response (after phase).
func (c *Call) Response() gjson.Result { return c.Get(abi.FieldResponse) }

// Locale is the language of model-facing texts for this call.
func (c *Call) Locale() abi.Locale { return abi.ParseLocale(c.Get(abi.FieldLocale).String()) }

// Success reports that the tool ran and succeeded.
func (c *Call) Success(message string, data []byte) { c.r.success(message, data) }

// Failed reports that the tool ran and failed.
func (c *Call) Failed(code abi.Code, reason, next string, data []byte) {
	c.r.result(abi.OutcomeFailed, string(code), reason, next, data)
}

// Rejected reports that the call broke a rule and must not run.
func (c *Call) Rejected(code abi.Code, reason, next string) {
	c.r.result(abi.OutcomeRejected, string(code), reason, next, nil)
}

// Deferred reports that a prerequisite step must come first.
func (c *Call) Deferred(code abi.Code, reason, next string) {
	c.r.result(abi.OutcomeDeferred, string(code), reason, next, nil)
}

// Code reports a result with a code the plugin declared in its manifest
// (Manifest.Codes): the code's outcome, its reason and next-step templates
// in the call's locale with {name} placeholders filled from kv pairs, and
// data (nil for none). A name the manifest does not declare is reported as
// it is, and the host refuses it as an unregistered code.
func (c *Call) Code(name string, data []byte, kv ...string) {
	if c.m != nil {
		if spec, ok := c.m.Declared(name); ok {
			l := c.Locale()
			c.r.result(spec.Outcome, spec.Name, spec.Reason.In(l, kv...), spec.Next.In(l, kv...), data)
			return
		}
	}
	c.r.result(abi.OutcomeRejected, name, name, name, data)
}

// Pass lets the call go on (guards only), optionally with rewritten
// arguments (a JSON object; nil keeps them) and provenance facts.
func (c *Call) Pass(args []byte, facts ...abi.Fact) {
	var fb []byte
	if len(facts) > 0 {
		fb = appendFacts(make([]byte, 0, 64*len(facts)), facts)
	}
	c.r.pass(args, fb)
}

// Effect asks the host to apply a state change if the call is accepted. The
// manifest must have been granted the kind's capability.
func (c *Call) Effect(kind string, payload []byte) { c.r.effect(kind, payload) }

// Now reads the host clock. Without the clock capability it is a
// deterministic stand-in, never the host's real time.
func (c *Call) Now() time.Time { return time.Unix(0, c.r.now()).UTC() }

// Random fills p from the host's randomness; without the random capability
// it is a deterministic stream.
func (c *Call) Random(p []byte) { c.r.random(p) }

// Log writes a line to the host's log for this plugin (bounded).
func (c *Call) Log(msg string) { c.r.log(0, msg) }

// StatePath returns the envelope path of a state view, joined with an
// optional sub-path: StatePath(abi.CapStateLedger, "entries") is
// `state.state\.ledger.entries`. Use it with Get and Has to read only the
// part of a view a decision needs.
func StatePath(view abi.Capability, sub string) string {
	p := abi.FieldState + "." + gjsonEscape(string(view))
	if sub != "" {
		p += "." + sub
	}
	return p
}

// Escape quotes gjson's path syntax (. * ? | # @ \) in one path segment,
// e.g. a key taken from data.
func Escape(segment string) string { return gjsonEscape(segment) }

func gjsonEscape(s string) string {
	out := make([]byte, 0, len(s)+2)
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '.', '*', '?', '|', '#', '@', '\\':
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}
