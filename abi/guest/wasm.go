//go:build wasip1

package guest

import (
	"unsafe"

	"github.com/agentwarden/warden/abi"
)

// The direct ABI (module "warden"). Strings are (pointer, length) pairs in
// the guest's linear memory; the host copies them during the call.

//go:wasmimport warden success
func hostSuccess(msg unsafe.Pointer, msgLen uint32, data unsafe.Pointer, dataLen uint32)

//go:wasmimport warden failed
func hostFailed(code unsafe.Pointer, codeLen uint32, reason unsafe.Pointer, reasonLen uint32, next unsafe.Pointer, nextLen uint32, data unsafe.Pointer, dataLen uint32)

//go:wasmimport warden rejected
func hostRejected(code unsafe.Pointer, codeLen uint32, reason unsafe.Pointer, reasonLen uint32, next unsafe.Pointer, nextLen uint32)

//go:wasmimport warden deferred
func hostDeferred(code unsafe.Pointer, codeLen uint32, reason unsafe.Pointer, reasonLen uint32, next unsafe.Pointer, nextLen uint32)

//go:wasmimport warden pass
func hostPass(args unsafe.Pointer, argsLen uint32, facts unsafe.Pointer, factsLen uint32)

//go:wasmimport warden effect
func hostEffect(kind unsafe.Pointer, kindLen uint32, payload unsafe.Pointer, payloadLen uint32)

//go:wasmimport warden now
func hostNow() int64

//go:wasmimport warden random
func hostRandom(p unsafe.Pointer, n uint32)

//go:wasmimport warden log
func hostLog(level int32, msg unsafe.Pointer, msgLen uint32)

//go:wasmimport warden query
func hostQuery(path unsafe.Pointer, pathLen uint32, buf unsafe.Pointer, bufCap uint32) int64

//go:wasmimport warden digest
func hostDigest(path unsafe.Pointer, pathLen uint32, buf unsafe.Pointer, bufCap uint32) int64

//go:wasmimport warden hash
func hostHash(path unsafe.Pointer, pathLen uint32, buf unsafe.Pointer, bufCap uint32) int64

//go:wasmimport warden canonical
func hostCanonical(path unsafe.Pointer, pathLen uint32, buf unsafe.Pointer, bufCap uint32) int64

//go:wasmimport warden walk
func hostWalk(path unsafe.Pointer, pathLen uint32, limit uint32, buf unsafe.Pointer, bufCap uint32) int64

//go:wasmimport warden items
func hostItems(path unsafe.Pointer, pathLen uint32, limit uint32, buf unsafe.Pointer, bufCap uint32) int64

//go:wasmimport warden validate
func hostValidate(schemaPath unsafe.Pointer, schemaPathLen uint32, docPath unsafe.Pointer, docPathLen uint32, buf unsafe.Pointer, bufCap uint32) int64

var (
	// svcBuf receives the answers of host primitives; it grows to the
	// largest one.
	svcBuf   = make([]byte, 4096)
	served   *Plugin
	manifest []byte
	input    []byte
	call     = &Call{r: wasmReporter{}}
)

// Serve makes p the plugin this module serves. Call it from an init function
// of the main package; main itself is never run.
func Serve(p Plugin) {
	if served != nil || len(servable) > 0 {
		panic("guest: Serve called twice")
	}
	register(p)
	served, manifest = servable[0].p, servable[0].manifest
	call.m = &served.Manifest
}

// ServeAll makes this module serve each of ps, one per instance: the host
// selects which by its manifest's name (abi.ExportSelect) when it starts
// an instance, before it reads the manifest, so that one module (one Go
// runtime, one compilation) serves several slots, each slot with
// instances and memory of its own. An instance nothing selected serves
// nothing: its manifest is empty, which the host refuses. Call it from an
// init function of the main package, with plugins of distinct names.
func ServeAll(ps ...Plugin) {
	if served != nil || len(servable) > 0 {
		panic("guest: Serve called twice")
	}
	for _, p := range ps {
		for _, s := range servable {
			if s.p.Manifest.Name == p.Manifest.Name {
				panic("guest: ServeAll: two plugins named " + p.Manifest.Name)
			}
		}
		register(p)
	}
}

// servable are the plugins this module serves, with their manifests
// encoded; served is the one selected.
var servable []servablePlugin

type servablePlugin struct {
	p        *Plugin
	manifest []byte
}

func register(p Plugin) {
	if p.Manifest.ABI == 0 {
		p.Manifest.ABI = abi.Version
	}
	b, err := marshalManifest(p.Manifest)
	if err != nil {
		panic(err)
	}
	servable = append(servable, servablePlugin{&p, b})
}

// selectReason holds exportSelect's last refusal, which the host reads.
var selectReason []byte

// exportSelect selects the plugin named by the n bytes in the input buffer.
// It returns 0 when that plugin now serves, else why not, packed as
// ptr<<32 | len: the plugins the module serves, or the one selected
// already (an instance serves one plugin for its life).
//
//go:wasmexport warden_select
func exportSelect(n uint32) uint64 {
	if n > uint32(len(input)) {
		n = uint32(len(input))
	}
	name := string(input[:n])
	for _, s := range servable {
		if s.p.Manifest.Name != name {
			continue
		}
		switch {
		case served == s.p:
			return 0
		case served == nil:
			served, manifest = s.p, s.manifest
			call.m = &served.Manifest
			return 0
		}
	}
	var reason []byte
	if served != nil && len(servable) > 1 {
		reason = append(reason, "this instance serves "...)
		reason = append(reason, served.Manifest.Name...)
	} else {
		reason = append(reason, "the module serves "...)
		for i, s := range servable {
			if i > 0 {
				reason = append(reason, ", "...)
			}
			reason = append(reason, s.p.Manifest.Name...)
		}
	}
	selectReason = reason
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(selectReason))))<<32 | uint64(len(selectReason))
}

// exportLeanInput says the guest reads the response through the host
// (abi.ExportLeanInput): Call.Get and the primitives do, Call.Raw's bytes
// lack it.
//
//go:wasmexport warden_lean_input
func exportLeanInput() {}

//go:wasmexport warden_abi_version
func exportABIVersion() uint32 { return abi.Version }

// exportManifest returns the manifest's address and length packed as
// ptr<<32 | len.
//
//go:wasmexport warden_manifest
func exportManifest() uint64 {
	if len(manifest) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(manifest))))<<32 | uint64(len(manifest))
}

// exportInput returns a buffer of n bytes the host writes the request into.
//
//go:wasmexport warden_input
func exportInput(n uint32) uint32 {
	if uint32(cap(input)) < n {
		input = make([]byte, n)
	}
	input = input[:n]
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(input))))
}

// exportHandle runs the handler on the n-byte request in the input buffer.
//
//go:wasmexport warden_handle
func exportHandle(n uint32) {
	if served == nil || served.Handle == nil {
		return
	}
	call.req = input[:n]
	served.Handle(call)
	call.req = nil
}

type wasmReporter struct{}

func sp(s string) (unsafe.Pointer, uint32) {
	return unsafe.Pointer(unsafe.StringData(s)), uint32(len(s))
}

func bp(b []byte) (unsafe.Pointer, uint32) {
	return unsafe.Pointer(unsafe.SliceData(b)), uint32(len(b))
}

func (wasmReporter) success(message string, data []byte) {
	m, ml := sp(message)
	d, dl := bp(data)
	hostSuccess(m, ml, d, dl)
}

func (wasmReporter) result(o abi.Outcome, code, reason, next string, data []byte) {
	c, cl := sp(code)
	r, rl := sp(reason)
	n, nl := sp(next)
	switch o {
	case abi.OutcomeFailed:
		d, dl := bp(data)
		hostFailed(c, cl, r, rl, n, nl, d, dl)
	case abi.OutcomeRejected:
		hostRejected(c, cl, r, rl, n, nl)
	default:
		hostDeferred(c, cl, r, rl, n, nl)
	}
}

func (wasmReporter) pass(args, facts []byte) {
	a, al := bp(args)
	f, fl := bp(facts)
	hostPass(a, al, f, fl)
}

func (wasmReporter) effect(kind string, payload []byte) {
	k, kl := sp(kind)
	p, pl := bp(payload)
	hostEffect(k, kl, p, pl)
}

func (wasmReporter) now() int64 { return hostNow() }

func (wasmReporter) random(p []byte) {
	b, bl := bp(p)
	hostRandom(b, bl)
}

func (wasmReporter) log(level int32, msg string) {
	m, ml := sp(msg)
	hostLog(level, m, ml)
}

// The primitive calls retry with a larger svcBuf when the result does not
// fit. They are written out without closures: every allocation inside a
// guest is costly (Go compiled to wasm runs several times slower than
// native, and every loop header pays the meter's check).

func (wasmReporter) query(path string) (string, bool) {
	p, pl := sp(path)
	for {
		b, n := bp(svcBuf)
		got := hostQuery(p, pl, b, n)
		switch {
		case got < 0:
			return "", false
		case got <= int64(len(svcBuf)):
			return string(svcBuf[:got]), true
		}
		svcBuf = make([]byte, got)
	}
}

func (wasmReporter) exists(path string) bool {
	p, pl := sp(path)
	return hostQuery(p, pl, nil, 0) >= 0
}

func (wasmReporter) validate(schemaPath, docPath string) []byte {
	s, sl := sp(schemaPath)
	d, dl := sp(docPath)
	for {
		b, n := bp(svcBuf)
		got := hostValidate(s, sl, d, dl, b, n)
		switch {
		case got <= 0:
			return nil
		case got <= int64(len(svcBuf)):
			return append([]byte(nil), svcBuf[:got]...)
		}
		svcBuf = make([]byte, got)
	}
}

func (wasmReporter) digest(path string, out *[DigestSize]byte) {
	p, pl := sp(path)
	hostDigest(p, pl, unsafe.Pointer(out), DigestSize)
}

func (wasmReporter) hash(path string, out *[DigestSize]byte) bool {
	p, pl := sp(path)
	return hostHash(p, pl, unsafe.Pointer(out), DigestSize) == DigestSize
}

func (wasmReporter) walk(path string, limit int) string {
	return askLimited(hostWalk, path, limit)
}

func (wasmReporter) items(path string, limit int) string {
	return askLimited(hostItems, path, limit)
}

// askLimited asks a host function that answers a path under a limit (walk,
// items) into svcBuf, growing it to the size the host says the answer
// needs; "" when the host has no answer.
func askLimited(ask func(path unsafe.Pointer, pathLen, limit uint32, buf unsafe.Pointer, bufCap uint32) int64, path string, limit int) string {
	p, pl := sp(path)
	for {
		b, n := bp(svcBuf)
		got := ask(p, pl, uint32(max(limit, 0)), b, n)
		switch {
		case got < 0:
			return ""
		case got <= int64(len(svcBuf)):
			return string(svcBuf[:got])
		}
		svcBuf = make([]byte, got)
	}
}

func (wasmReporter) canonical(path string) []byte {
	p, pl := sp(path)
	for {
		b, n := bp(svcBuf)
		got := hostCanonical(p, pl, b, n)
		switch {
		case got < 0:
			return nil
		case got <= int64(len(svcBuf)):
			return append([]byte(nil), svcBuf[:got]...)
		}
		svcBuf = make([]byte, got)
	}
}

//go:wasmimport warden splice
func hostSplice(kind unsafe.Pointer, kindLen uint32, parts unsafe.Pointer, partsLen uint32)

func (wasmReporter) splice(kind string, parts []byte) {
	k, kl := sp(kind)
	p, pl := bp(parts)
	hostSplice(k, kl, p, pl)
}

func (wasmReporter) size(path string) int {
	p, pl := sp(path)
	return int(max(hostQuery(p, pl, nil, 0), -1))
}
