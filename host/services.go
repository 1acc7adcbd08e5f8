package host

import (
	"context"

	"github.com/agentwarden/warden/internal/jsonschema"
	"github.com/agentwarden/warden/internal/services"
	"github.com/tetratelabs/wazero/api"
	"github.com/tidwall/gjson"
)

// Host services: reads a guest asks the host to do on the current request.
// They exist because byte-by-byte work is slow inside a Go guest (every
// branch passes wazero's termination check, see docs/RATIONALE.md), while
// the host does the same with native gjson and jsonschema. A service reads
// only the request of the call in progress, so it grants nothing new.

// Service results are written into a guest buffer; the return value is the
// result's length, or one of these.
var (
	serviceNotFound = ^uint64(0)     // -1: query matched nothing
	serviceBadArgs  = ^uint64(0) - 1 // -2: a pointer was out of bounds
)

// query(pathPtr, pathLen, bufPtr, bufCap) -> i64: the raw JSON of a gjson
// path on the request. If the result is longer than bufCap, nothing is
// written and the length is returned: the guest retries with a larger buffer
// and the host answers from its one-entry cache.
func hostQuery(ctx context.Context, m api.Module, stack []uint64) {
	st := stateFrom(ctx)
	if st == nil {
		stack[0] = serviceBadArgs
		return
	}
	pb, ok := read(st, m, stack[0], stack[1])
	if !ok {
		stack[0] = serviceBadArgs
		return
	}
	key := "q\x00" + string(pb)
	out, found := st.cached(key, func() ([]byte, bool) {
		r := gjson.GetBytes(st.req, string(pb))
		if !r.Exists() {
			return nil, false
		}
		return []byte(r.Raw), true
	})
	if !found {
		stack[0] = serviceNotFound
		return
	}
	stack[0] = deliver(st, m, out, uint32(stack[2]), uint32(stack[3]))
}

// validate(schemaPathPtr, schemaPathLen, docPathPtr, docPathLen, bufPtr,
// bufCap) -> i64: validates the JSON at one request path against the JSON
// Schema at another and writes the compact encoding of jsonschema.Check:
// empty when valid, 'S' + message when the schema does not compile, 'E' +
// records (path, keyword, message) otherwise. A missing document is
// validated as null.
//
// It is a sandboxed primitive: the inputs are bounded (a schema of at most
// jsonschema.MaxSchemaBytes and MaxSchemaNodes, a document of at most
// MaxDocBytes, both nested at most MaxDepth), a $ref never leaves the schema
// document (nothing is fetched or read from disk), and compiled schemas live
// in the byte-bounded jsonschema.Shared cache, never in a map that grows
// with what tenants send.
func hostValidate(ctx context.Context, m api.Module, stack []uint64) {
	st := stateFrom(ctx)
	if st == nil {
		stack[0] = serviceBadArgs
		return
	}
	sp, ok1 := read(st, m, stack[0], stack[1])
	dp, ok2 := read(st, m, stack[2], stack[3])
	if !ok1 || !ok2 {
		stack[0] = serviceBadArgs
		return
	}
	key := "v\x00" + string(sp) + "\x00" + string(dp)
	out, _ := st.cached(key, func() ([]byte, bool) {
		return jsonschema.Check(gjson.GetBytes(st.req, string(sp)).Raw, gjson.GetBytes(st.req, string(dp))), true
	})
	stack[0] = deliver(st, m, out, uint32(stack[4]), uint32(stack[5]))
}

func deliver(st *callState, m api.Module, out []byte, ptr, capacity uint32) uint64 {
	if uint32(len(out)) > capacity {
		return uint64(len(out))
	}
	if len(out) > 0 && !m.Memory().Write(ptr, out) {
		return serviceBadArgs
	}
	return uint64(len(out))
}

// cached answers a service call from the state's one-entry cache, so a
// guest retrying with a larger buffer does not pay twice.
func (st *callState) cached(key string, compute func() ([]byte, bool)) ([]byte, bool) {
	if st.lastKey == key {
		return st.lastOut, st.lastFound
	}
	out, found := compute()
	st.lastKey, st.lastOut, st.lastFound = key, out, found
	return out, found
}

// service(namePtr, nameLen, inPtr, inLen, bufPtr, bufCap) -> i64: runs a
// named service of internal/services on the current request. The result is
// 'O' + output, or 'E' + error text; the length protocol is query's.
func hostService(ctx context.Context, m api.Module, stack []uint64) {
	st := stateFrom(ctx)
	if st == nil {
		stack[0] = serviceBadArgs
		return
	}
	name, ok1 := read(st, m, stack[0], stack[1])
	in, ok2 := read(st, m, stack[2], stack[3])
	if !ok1 || !ok2 {
		stack[0] = serviceBadArgs
		return
	}
	key := "s\x00" + string(name) + "\x00" + string(in)
	out, _ := st.cached(key, func() ([]byte, bool) {
		res, err := services.Call(string(name), st.req, in)
		if err != nil {
			return append([]byte{'E'}, err.Error()...), true
		}
		return append([]byte{'O'}, res...), true
	})
	stack[0] = deliver(st, m, out, uint32(stack[4]), uint32(stack[5]))
}
