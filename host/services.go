package host

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/services"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
	"github.com/tidwall/gjson"
)

// Host primitives: general-purpose reads a guest asks the host to do on the
// request of the call in progress — path query and exists (query), JSON
// Schema validation (validate), the canonical JSON of a value and its
// digest (canonical, digest), the hash of a value's raw text (hash), one
// walk over a value's leaves (walk) and the members of a value's items
// (items). They decide nothing: the rules of the spec are decided inside the plugins, so
// that swapping a plugin can change any of them. Each reads only the request
// of the call in progress, so it grants nothing new. docs/ABI.md documents
// their signatures and encodings.
//
// Every primitive is part of the sandbox (docs/RATIONALE.md, "The sandbox
// boundary of host functions") and follows one pattern — begin, charge,
// refuse, answer:
//
//   - begin: it checks the call's context first; a call past its deadline
//     ends there as PLUGIN_TIMEOUT instead of doing host work;
//   - its inputs are bounded before any work: a path passes
//     services.CheckPath (length, nesting, '!' literals held to the same
//     bounds, a few linear modifiers only), a schema and document jsonschema's bounds; a
//     refused input voids the call as a contract violation (host_refused,
//     naming the reason), and ends it there;
//   - charge: the bytes the host reads, computes and answers during one call
//     are charged against the plugin's memory limit (beyond it
//     PLUGIN_MEMORY_LIMIT);
//   - answer: it checks the deadline again after its work; validate gives up
//     waiting for a compile at the deadline; an answer is at most the
//     plugin's output limit (beyond it the call ends as
//     PLUGIN_OUTPUT_TOO_LARGE).

// Answers are written into a guest buffer; the return value is the answer's
// length, or one of these (abi.AnswerNotFound, abi.AnswerRefused).
var (
	serviceNotFound = api.EncodeI64(abi.AnswerNotFound) // query matched nothing
	serviceBadArgs  = api.EncodeI64(abi.AnswerRefused)  // a pointer was out of bounds, or the input was refused
)

// stopCall ends the guest's call from inside a host function: wazero
// unwinds the guest and Invoke classifies the error.
func stopCall(ctx context.Context) {
	if f := stopHook.Load(); f != nil {
		if dl, ok := ctx.Deadline(); ok {
			ref := ""
			if st := stateFrom(ctx); st != nil {
				ref = st.plugin.ref
			}
			(*f)(ref, time.Since(dl))
		}
	}
	code := uint32(sys.ExitCodeDeadlineExceeded)
	if errors.Is(ctx.Err(), context.Canceled) {
		code = sys.ExitCodeContextCanceled
	}
	panic(sys.NewExitError(code))
}

// stopHook, when set (by tests), is told how long after its deadline a host
// function stopped a plugin's call.
var stopHook atomic.Pointer[func(plugin string, late time.Duration)]

// begin is the first thing every host service does: a call whose deadline
// has passed does no more host work.
func begin(ctx context.Context) *callState {
	if ctx.Err() != nil {
		stopCall(ctx)
	}
	return stateFrom(ctx)
}

// charge accounts n bytes of host memory spent on the call's behalf against
// the plugin's memory limit, and ends the call when it is spent.
func (st *callState) charge(n int) {
	st.hostBytes += int64(n)
	if st.hostBytes > int64(st.plugin.limits.MemoryPages)*wasmPage {
		panic(fmt.Errorf("host: %d bytes of host services: %w", st.hostBytes, errHostMemory))
	}
}

const wasmPage = 64 << 10

// refuse voids the call for an input a host service does not take, and
// ends it: the guest's result could not count any more.
func refuse(st *callState, err error) uint64 {
	st.rec.Violate(abi.ViolationHostRefused, err.Error())
	panic(fmt.Errorf("host: %w", errCallVoid))
}

// answer delivers a service's answer after the deadline and output checks.
func answer(ctx context.Context, st *callState, m api.Module, out []byte, ptr, capacity uint32) uint64 {
	if ctx.Err() != nil {
		stopCall(ctx)
	}
	// An answer that does not fit the guest's buffer is not copied (the
	// guest learns only its length, as Has asks), so only one that is
	// delivered counts against the output limit.
	if uint32(len(out)) <= capacity && len(out) > st.plugin.limits.MaxOutputBytes {
		st.rec.Charge(len(out)) // over the limit whatever was used: records PLUGIN_OUTPUT_TOO_LARGE
		panic(fmt.Errorf("host: %w", errCallVoid))
	}
	return deliver(st, m, out, ptr, capacity)
}

// query(pathPtr, pathLen, bufPtr, bufCap) -> i64: the raw JSON of a gjson
// path on the request. If the result is longer than bufCap, nothing is
// written and the length is returned: the guest retries with a larger buffer
// and the host answers from its one-entry cache.
func hostQuery(ctx context.Context, m api.Module, stack []uint64) {
	st, path, ok := pathArg(ctx, m, stack)
	if !ok {
		return
	}
	var refused error
	out, found := st.cached("q", path, "", func() ([]byte, bool) {
		st.charge(len(path))
		r, err := st.query(path)
		if err != nil {
			refused = err
			return nil, false
		}
		if !r.Exists() {
			return nil, false
		}
		st.charge(2 * len(r.Raw)) // the result and our copy of it
		st.answer = append(st.answer[:0], r.Raw...)
		return st.answer, true
	})
	switch {
	case refused != nil:
		stack[0] = refuse(st, refused)
	case !found:
		stack[0] = serviceNotFound
	default:
		stack[0] = answer(ctx, st, m, out, uint32(stack[2]), uint32(stack[3]))
	}
}

// query evaluates a checked path on the call's request through the index
// of its members (services.Members): the answer is gjson's on the whole
// request, read from the one member the path's first key names. It aliases
// the request's bytes, valid until the call ends.
func (st *callState) query(path string) (gjson.Result, error) {
	return st.members.Query(path)
}

// validate(schemaPathPtr, schemaPathLen, docPathPtr, docPathLen, bufPtr,
// bufCap) -> i64: validates the JSON at one request path against the JSON
// Schema at another and writes the encoding of services.Validate: empty when
// valid, 'S' + message when the schema does not compile, 'E' + records of
// three length-prefixed fields (path, keyword, message) otherwise. A missing
// document is validated as null; the length protocol is query's.
//
// It is a sandboxed primitive: the inputs are bounded (a schema of at most
// jsonschema.MaxSchemaBytes and MaxSchemaNodes, a document of at most
// MaxDocBytes, both nested at most MaxDepth), a $ref never leaves the schema
// document (nothing is fetched or read from disk), and compiled schemas live
// in the byte-bounded jsonschema.Shared cache, never in a map that grows
// with what tenants send.
func hostValidate(ctx context.Context, m api.Module, stack []uint64) {
	st := begin(ctx)
	if st == nil {
		stack[0] = serviceBadArgs
		return
	}
	if a, b := uint32(stack[1]), uint32(stack[3]); a > services.MaxPathBytes || b > services.MaxPathBytes {
		stack[0] = refuse(st, fmt.Errorf("services: %w: %d bytes, the limit is %d", services.ErrPath, max(a, b), services.MaxPathBytes))
		return
	}
	spb, ok1 := read(st, m, stack[0], stack[1])
	dpb, ok2 := read(st, m, stack[2], stack[3])
	if !ok1 || !ok2 {
		stack[0] = serviceBadArgs
		return
	}
	st.path = append(append(st.path[:0], spb...), dpb...)
	sp, dp := st.path[:len(spb):len(spb)], st.path[len(spb):]
	var refused error
	out, found := st.cached("v", unsafeString(sp), unsafeString(dp), func() ([]byte, bool) {
		st.charge(len(sp) + len(dp))
		schema, err := st.query(unsafeString(sp))
		if err != nil {
			refused = err
			return nil, false
		}
		kept := st.members.Stable()
		doc, err := st.query(unsafeString(dp))
		if err != nil {
			refused = err
			return nil, false
		}
		kept = kept && (st.members.Stable() || !doc.Exists())
		// A compile keeps about twice the schema's text (see jsonschema's
		// estimate); charge that whether or not it was cached.
		st.charge(2 * len(schema.Raw))
		// The call's memo keeps the answers as they are only when they
		// live as long as the call (Members.Stable); a modifier's or a
		// literal's answer, or one in the envelope's reused buffer, is
		// copied, so no later write can change what was found valid.
		out, err := services.ValidateIn(ctx, schema.Raw, doc, kept)
		if err != nil {
			stopCall(ctx) // the deadline passed while compiling or validating
		}
		st.charge(len(out))
		return out, true
	})
	switch {
	case refused != nil:
		stack[0] = refuse(st, refused)
		return
	case !found: // not reached: a refusal ends the call
		stack[0] = serviceBadArgs
		return
	}
	stack[0] = answer(ctx, st, m, out, uint32(stack[4]), uint32(stack[5]))
}

// digest(pathPtr, pathLen, bufPtr, bufCap) -> i64: the SHA-256 of the
// canonical JSON of the value at a gjson path of the request (of "null" when
// the path matches nothing), as 32 raw bytes; see services.Digest. The
// length protocol is query's: with bufCap < 32 nothing is written and 32 is
// returned.
func hostDigest(ctx context.Context, m api.Module, stack []uint64) {
	pathAnswer(ctx, m, stack, "d", func(st *callState, v gjson.Result) ([]byte, bool) {
		st.charge(2 * len(v.Raw)) // gjson's result and the canonical form
		// The call's memo (services.WithValidated, when the caller set
		// one) computes each value's canonical form once per call.
		st.sum = services.DigestIn(ctx, v, st.members.Stable())
		return st.sum[:], true
	})
}

// canonical(pathPtr, pathLen, bufPtr, bufCap) -> i64: the canonical JSON of
// the value at a gjson path of the request ("null" when the path matches
// nothing), the form digest hashes; see services.Canonical. The length
// protocol is query's.
func hostCanonical(ctx context.Context, m api.Module, stack []uint64) {
	pathAnswer(ctx, m, stack, "c", func(st *callState, v gjson.Result) ([]byte, bool) {
		st.charge(2 * len(v.Raw)) // gjson's result and the canonical form
		return services.CanonicalIn(ctx, v, st.members.Stable()), true
	})
}

// hash(pathPtr, pathLen, bufPtr, bufCap) -> i64: the SHA-256 of the raw
// text of the value at a gjson path of the request, exactly as the request
// holds it, as 32 raw bytes; abi.AnswerNotFound when the path matches
// nothing. The length protocol is digest's.
func hostHash(ctx context.Context, m api.Module, stack []uint64) {
	pathAnswer(ctx, m, stack, "h", func(st *callState, v gjson.Result) ([]byte, bool) {
		if !v.Exists() {
			return nil, false
		}
		st.charge(len(v.Raw)) // gjson's result; the hash reads it in place
		sum := sha256.Sum256([]byte(v.Raw))
		return sum[:], true
	})
}

// pathArg reads the path a host function's first two arguments
// (pathPtr, pathLen) point at, bounded before the host copies anything;
// when there is none to read it has set the function's answer (stack[0])
// and says false.
func pathArg(ctx context.Context, m api.Module, stack []uint64) (*callState, string, bool) {
	st := begin(ctx)
	if st == nil {
		stack[0] = serviceBadArgs
		return nil, "", false
	}
	if n := uint32(stack[1]); n > services.MaxPathBytes {
		stack[0] = refuse(st, fmt.Errorf("services: %w: %d bytes, the limit is %d", services.ErrPath, n, services.MaxPathBytes))
		return nil, "", false
	}
	pb, ok := read(st, m, stack[0], stack[1])
	if !ok {
		stack[0] = serviceBadArgs
		return nil, "", false
	}
	// Copied out of guest memory into the state's buffer, which is reused
	// by the next primitive call: the path is read only during this one.
	st.path = append(st.path[:0], pb...)
	return st, unsafeString(st.path), true
}

// unsafeString is b as a string without a copy; b must not change while
// the string is in use.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// pathAnswer answers digest, canonical and hash, whose arguments are
// (pathPtr, pathLen, bufPtr, bufCap): the value at a gjson path of the
// request, made into the answer by form (which charges what it spends and
// says whether there is one), cached per call under kind and the path.
func pathAnswer(ctx context.Context, m api.Module, stack []uint64, kind string, form func(*callState, gjson.Result) ([]byte, bool)) {
	st, pb, ok := pathArg(ctx, m, stack)
	if !ok {
		return
	}
	var refused error
	out, found := st.cached(kind, pb, "", func() ([]byte, bool) {
		st.charge(len(pb))
		v, err := st.query(pb)
		if err != nil {
			refused = err
			return nil, false
		}
		return form(st, v)
	})
	if refused != nil {
		stack[0] = refuse(st, refused)
		return
	}
	if !found {
		stack[0] = serviceNotFound
		return
	}
	stack[0] = answer(ctx, st, m, out, uint32(stack[2]), uint32(stack[3]))
}

// walk(pathPtr, pathLen, limit, bufPtr, bufCap) -> i64: one pass over the
// value at a gjson path of the request, answering its kind, its size and
// its distinct non-null scalar leaves (at most limit, capped at
// services.MaxWalkLeaves); see services.Walk for the encoding. The length
// protocol is query's.
func hostWalk(ctx context.Context, m api.Module, stack []uint64) {
	limitedAnswer(ctx, m, stack, "w", services.MaxWalkLeaves, func(st *callState, v gjson.Result, limit int) []byte {
		st.charge(2 * len(v.Raw)) // gjson's result, the walk's set of leaves
		return services.WalkValue(v, limit)
	})
}

// items(pathPtr, pathLen, limit, bufPtr, bufCap) -> i64: the kind, raw
// text, text and members of each item of the value at a gjson path of the
// request (at most limit items, capped at services.MaxItems); see
// services.Items for the encoding. The length protocol is query's.
func hostItems(ctx context.Context, m api.Module, stack []uint64) {
	limitedAnswer(ctx, m, stack, "i", services.MaxItems, func(st *callState, v gjson.Result, limit int) []byte {
		st.charge(len(v.Raw)) // gjson's result
		return services.ItemsValue(v, limit)
	})
}

// limitedAnswer answers walk and items, whose arguments are
// (pathPtr, pathLen, limit, bufPtr, bufCap): the value at a gjson path of
// the request made into the answer by form under a limit capped at most,
// the answer charged and cached per call under kind, the limit and the
// path.
func limitedAnswer(ctx context.Context, m api.Module, stack []uint64, kind string, most uint32, form func(*callState, gjson.Result, int) []byte) {
	st, pb, ok := pathArg(ctx, m, stack)
	if !ok {
		return
	}
	limit := min(uint32(stack[2]), most)
	var lim [4]byte
	binary.LittleEndian.PutUint32(lim[:], limit)
	var refused error
	out, _ := st.cached(kind, pb, unsafeString(lim[:]), func() ([]byte, bool) {
		st.charge(len(pb))
		v, err := st.query(pb)
		if err != nil {
			refused = err
			return nil, false
		}
		out := form(st, v, int(limit))
		st.charge(len(out))
		return out, true
	})
	if refused != nil {
		stack[0] = refuse(st, refused)
		return
	}
	stack[0] = answer(ctx, st, m, out, uint32(stack[3]), uint32(stack[4]))
}

func deliver(st *callState, m api.Module, out []byte, ptr, capacity uint32) uint64 {
	if uint32(len(out)) > capacity {
		return uint64(len(out))
	}
	if len(out) > 0 && !m.Memory().Write(ptr, out) {
		st.rec.Violate(abi.ViolationBadPointer, fmt.Sprintf("%d+%d", ptr, len(out)))
		return serviceBadArgs
	}
	return uint64(len(out))
}

// cached answers a service call from the state's one-entry cache, so a
// guest retrying with a larger buffer does not pay twice. The key is the
// service's kind, the path and extra (a second path, a limit), compared
// byte for byte with the last one's.
func (st *callState) cached(kind string, path, extra string, compute func() ([]byte, bool)) ([]byte, bool) {
	st.key = append(st.key[:0], kind...)
	st.key = append(st.key, 0)
	st.key = binary.LittleEndian.AppendUint32(st.key, uint32(len(path)))
	st.key = append(st.key, path...)
	st.key = append(st.key, extra...)
	if len(st.lastKey) > 0 && string(st.lastKey) == string(st.key) {
		return st.lastOut, st.lastFound
	}
	out, found := compute()
	st.lastKey = append(st.lastKey[:0], st.key...)
	st.lastOut, st.lastFound = out, found
	return out, found
}

// splice(kindPtr, kindLen, partsPtr, partsLen): effects of one kind whose
// payloads the host assembles from the guest's parts (services.Splice):
// literal JSON the guest wrote and values of the request copied in without
// passing through the guest. The parts are bounded by the plugin's output
// limit and charged to its memory as they are read; the payloads are
// assembled within the output room left and charged to it; the guest's
// literal JSON is checked through each payload's skeleton
// (abi.Recorder.EffectSpliced) and each value copied in once. Malformed
// parts, a refused path or a value over the room void the call.
func hostSplice(ctx context.Context, m api.Module, stack []uint64) {
	st := begin(ctx)
	if st == nil {
		return
	}
	room := st.rec.Room()
	if n := int(uint32(stack[1]) + uint32(stack[3])); room >= 0 && n > room {
		st.rec.Charge(n) // records PLUGIN_OUTPUT_TOO_LARGE
		return
	}
	kind, ok1 := read(st, m, stack[0], stack[1])
	parts, ok2 := read(st, m, stack[2], stack[3])
	if !ok1 || !ok2 {
		return
	}
	st.charge(len(parts))
	k := string(kind)
	stopped, grown := false, false
	err := services.Splice(parts, &spliceReader{ctx: ctx, st: st}, room, func(n int, p services.Spliced) {
		if stopped {
			return
		}
		if ctx.Err() != nil {
			stopCall(ctx)
		}
		if !grown {
			st.rec.GrowEffects(n)
			grown = true
		}
		st.charge(len(p.Payload) + len(p.Skeleton))
		if !st.rec.Charge(len(k) + len(p.Payload)) {
			stopped = true
			return
		}
		st.rec.EffectSpliced(k, p.Skeleton, p.Payload)
	})
	switch {
	case errors.Is(err, services.ErrSpliceTooLarge):
		st.rec.Charge(room + 1)
	case errors.Is(err, services.ErrSpliceJSON):
		st.rec.Violate(abi.ViolationBadData, k+": "+err.Error())
	case err != nil:
		refuse(st, err)
	}
}

// spliceReader reads a splice's values in the request of the call in
// progress, in place (the splice copies what it takes). Each value is
// charged as read, before the payloads are assembled: its bytes (which
// the splice keeps and copies), twice for one that is not in place (a
// modifier's or a literal's, which gjson allocated), so that the values a
// splice reads are bounded by the plugin's memory whatever the room; the
// deadline is checked at each.
type spliceReader struct {
	ctx context.Context
	st  *callState
}

func (r *spliceReader) Query(path string) (gjson.Result, error) {
	if r.ctx.Err() != nil {
		stopCall(r.ctx)
	}
	r.st.charge(len(path) + 64) // the path and the value the splice keeps
	v, err := r.st.query(path)
	if err != nil {
		return v, err
	}
	r.st.charge(len(v.Raw))
	if !r.st.members.Stable() {
		r.st.charge(len(v.Raw))
	}
	return v, nil
}

func (r *spliceReader) Canonical(v gjson.Result) []byte {
	r.st.charge(2 * len(v.Raw))
	return services.Canonical(v)
}
