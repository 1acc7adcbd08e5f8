package abi

// The names and encodings of the ABI between a plugin and the host, named
// once. The host registers its functions under these names and checks a
// module's imports and exports against them; the guest SDK (abi/guest)
// declares its imports with the same names (a //go:wasmimport directive
// must carry literal names; a test holds them to these constants).
// docs/ABI.md is the reference of their signatures and meaning.

// ImportModule is the import module of the direct ABI's host functions.
const ImportModule = "warden"

// The host functions of ImportModule. docs/ABI.md gives each one's
// signature.
const (
	// Results: exactly one per call.
	FuncSuccess  = "success"  // (msg, data): the tool ran and succeeded
	FuncFailed   = "failed"   // (code, reason, next, data): the tool ran and failed
	FuncRejected = "rejected" // (code, reason, next): the call broke a rule
	FuncDeferred = "deferred" // (code, reason, next): a prerequisite comes first
	FuncPass     = "pass"     // (args, facts): guards only, the call goes on
	FuncEffect   = "effect"   // (kind, payload): a state change, applied if accepted

	// Environment.
	FuncNow    = "now"    // () -> i64: Unix nanoseconds
	FuncRandom = "random" // (ptr, n): n random bytes
	FuncLog    = "log"    // (level, msg): one log line

	// Primitives: buffer answers (see AnswerNotFound, AnswerRefused).
	FuncQuery     = "query"     // (path, buf) -> i64: the raw JSON at a path
	FuncValidate  = "validate"  // (schemaPath, docPath, buf) -> i64: see ValidateSchemaError
	FuncDigest    = "digest"    // (path, buf) -> i64: DigestSize bytes of SHA-256
	FuncWalk      = "walk"      // (path, limit, buf) -> i64: kind, size and distinct scalar leaves
	FuncCanonical = "canonical" // (path, buf) -> i64: the canonical JSON digest hashes
	FuncHash      = "hash"      // (path, buf) -> i64: DigestSize bytes of SHA-256 of the raw text
	FuncItems     = "items"     // (path, limit, buf) -> i64: each item's kind, text and members

	// Effects assembled by the host.
	FuncSplice = "splice" // (kind, parts): effects whose payloads the host splices from literal JSON and request values
)

// HostFuncs are the names of all of ImportModule's functions, in the order
// docs/ABI.md lists them.
var HostFuncs = []string{
	FuncSuccess, FuncFailed, FuncRejected, FuncDeferred, FuncPass, FuncEffect,
	FuncNow, FuncRandom, FuncLog,
	FuncQuery, FuncValidate, FuncDigest, FuncWalk, FuncCanonical, FuncHash, FuncItems,
	FuncSplice,
}

// The exports a direct-ABI guest provides, besides the WASI reactor's
// _initialize.
const (
	ExportABIVersion = "warden_abi_version" // () -> i32: Version
	ExportManifest   = "warden_manifest"    // () -> i64: the manifest, ptr<<32 | len
	ExportInput      = "warden_input"       // (n) -> i32: a buffer of n bytes for the request
	ExportHandle     = "warden_handle"      // (n) -> (): decide the call on the n-byte request
)

// ExportLeanInput is the optional export, () -> (), of a guest that reads
// an after-phase response only through the primitives (query, size, hash,
// digest, walk, splice, …): the host then writes its request into the
// input buffer without the response member, so that the response, which
// the result's data usually repeats, is copied into the guest at most
// once. The primitives answer paths under "response" from the host's copy
// as before. abi/guest exports it.
const ExportLeanInput = "warden_lean_input"

// ExportSelect is the optional export of a module serving several plugins
// (abi/guest.ServeAll): (n) -> i64 selects the plugin whose manifest name
// is the n bytes in the input buffer; 0 when selected, else a reason
// packed as ptr<<32 | len. The host calls it on every new instance, right
// after the instance starts and before it reads the manifest, when the
// module carries a SelectSection naming a plugin.
const ExportSelect = "warden_select"

// SelectSection is the custom section that names, after a module's last
// section, the plugin an instance of it serves (ExportSelect). A module
// with it is the multi-plugin module bound to one of its plugins; its
// digest names both.
const SelectSection = "warden.plugin"

// Buffer answers. A primitive answering into a guest buffer returns the
// answer's length n (written when n <= bufCap, else nothing is written and
// the guest asks again with n bytes), or one of these sentinels.
const (
	// AnswerNotFound is query's answer when the path matches nothing.
	AnswerNotFound int64 = -1
	// AnswerRefused is the answer when a pointer was out of the guest's
	// memory or the input was refused; the call is voided as well.
	AnswerRefused int64 = -2
)

// The answer of validate: empty when the document is valid, else one of
// these tags followed by its payload.
const (
	// ValidateSchemaError is followed by the message (UTF-8): the schema
	// does not compile.
	ValidateSchemaError byte = 'S'
	// ValidateProblems is followed by one record per problem, in the
	// validator's order; a record is three fields (path, keyword, message),
	// each a 4-byte little-endian length and that many bytes.
	ValidateProblems byte = 'E'
)

// DigestSize is the length of digest's answer: a SHA-256.
const DigestSize = 32

// The parts of splice (docs/ABI.md, "splice"): a tag byte and its fields,
// each length or limit 4 bytes little-endian.
const (
	SpliceJSON   byte = 'j' // length, bytes: literal JSON
	SpliceValue  byte = 'v' // length, path: the value, compact; null when missing
	SpliceString byte = 's' // limit, count, segments: one JSON string, cut to limit
	SpliceLeaves byte = 'w' // limit, length, path: walk's leaves as a JSON array of strings
	SpliceEnd    byte = 'e' // ends a payload

	// The segments of SpliceString: a mode byte, a length and its bytes.
	SegmentText      byte = 't' // the bytes as text
	SegmentRaw       byte = 'r' // the compact text of the value at a path
	SegmentCanonical byte = 'c' // the canonical JSON of the value at a path
)

// The Warden-over-extism ABI: a module that imports from ExtismEnvModule is
// loaded through the extism SDK and reports through ExtismUserModule's
// functions (host/extism.go documents their contract).
const (
	ExtismEnvModule  = "extism:host/env"
	ExtismUserModule = "extism:host/user"
)

// The host functions of ExtismUserModule. Each argument is an extism memory
// block's offset.
const (
	ExtismSuccess  = "warden_success"  // (msg, data)
	ExtismFailed   = "warden_failed"   // (code, reason, next, data)
	ExtismRejected = "warden_rejected" // (code, reason, next)
	ExtismDeferred = "warden_deferred" // (code, reason, next)
	ExtismPass     = "warden_pass"     // (args, facts)
	ExtismEffect   = "warden_effect"   // (kind, payload)
	ExtismNow      = "warden_now"      // () -> i64
	ExtismRandom   = "warden_random"   // (len) -> offset
	ExtismLog      = "warden_log"      // (msg)
)

// ExtismHostFuncs are the names of all of ExtismUserModule's functions.
var ExtismHostFuncs = []string{
	ExtismSuccess, ExtismFailed, ExtismRejected, ExtismDeferred, ExtismPass, ExtismEffect,
	ExtismNow, ExtismRandom, ExtismLog,
}
