// Package testdata holds the plugin fixtures the host's tests load, and the
// helper that builds them.
//
// Every Go fixture lives in guests/<name>/main.go, a package main built with
// the standard toolchain for WASI preview 1 as a reactor:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o <name>.wasm ./internal/testdata/guests/<name>
//
// Wasm does this on demand (and `make plugins` does it ahead of time), so no
// built Go module is committed. The fixtures in wat/ cover what Go cannot
// express (a module that is not a plugin, a forbidden import, a wrong ABI
// version, an out-of-bounds pointer, recursion that never touches linear
// memory); each .wasm beside its .wat was built with
//
//	wat2wasm wat/<name>.wat -o wat/<name>.wasm
//
// (recursion and extismrecursion were assembled by hand from theirs) and is
// committed because it is a few hundred bytes.
//
// One fixture per failure mode:
//
//	good           well-behaved guard: passes, or rejects when asked to
//	loop           handler loops forever
//	membomb        handler allocates past the memory cap
//	panicstart     panics in init, before the first call
//	panichandler   panics in the handler
//	noresult       returns without a result
//	tworesults     reports two results in one call
//	nonext         non-success without a next step
//	unknowncode    non-success with an unregistered code
//	openfile       tries to read host files
//	socket         tries to open network connections
//	sysinfo        reads the clock, environment and randomness without a grant
//	bigoutput      reports a result over the output limit
//	slowstart      loops in init, past the load deadline
//	slowinstance   starts at once at load, then takes 3 s to start each
//	               further instance (a pool miss inside a call)
//	ungranted      emits an effect it was not granted (nor asked for)
//	configured     has a config schema (load-time config checks)
//	services       calls the host primitives (query, exists, digest, validate)
//	goodv2         version 2.0.0 of good, for hot-swap tests
//	control-extrarule      the control builtin with one more finish rule
//	                       (cite the node's own evidence), for hot-swap tests
//	writegate-gatesread    WriteGate 1.1.0 that also gates search_articles
//	writegate-escalate     WriteGate 1.2.0 whose manifest asks for effect.node,
//	                       effect.output, state.conversation, clock and random
//	                       (refused by a WriteGate slot)
//	declaredcode   domainguard: declares DOMAIN_BLOCKED and rejects with it
//	shadowcode     declares a code named APPROVAL_REQUIRED (a runtime code's)
//	othercode      rejects with another plugin's declared code
//	paramcontract-nopunct  ParamContract 1.1.0 whose USER source ignores
//	                       punctuation (hot swap)
//	querystack     queries '!', a million '[' and "|@pretty" (overflowed the Go stack)
//	querypattern   queries a '%' pattern of 21 '*' over args.list
//	prettybomb     queries args|@pretty
//	schemabomb     validates args against the schema in args.schema, in a loop
//	servicebomb    hands the digest primitive a path of 1 MiB
//	queryloop      reads its arguments through the host without end
//	walkloop       walks its arguments through the host without end
//	gorecursion    recurses without end (a Go guest's stack is in linear memory)
//	badsignature   exports warden_handle with the wrong signature
//	reservedcode   answers with GUARD_UNAVAILABLE, a code only the host reports
//	deepnest       traps on arguments nested deeper than 64 levels
//	asciionly      traps on the first non-ASCII byte of its arguments
//	afterbuffer    after phase: traps on result data over 64 KiB
//	writepanic     panics on a call whose contract is a write (sideEffect WRITE)
//	writeloop      before and after: loops after a write
//	writenonext    rejects a write without a next step
//	writeunknowncode  rejects a write with an unregistered code
//	toolpanic      guards create_website; panics when its domain is missing
//	command        a good guard, built by Command as a WASI command (no
//	               -buildmode=c-shared): exports _start, not _initialize
//	               (Command builds extismgood the same way, for the extism
//	               loader)
//	trapguard      tenant guard: traps on the calls of the tool its config
//	               names (failure policies closed, open, shadow)
//	impostor       third-party builtin whose tool takes a first-party
//	               builtin's name (refused at install)
//	builtinnonext  third-party builtin whose tool fails without a next step
//	               (refused at install by the plugin kit's probes)
//	multi          two guards in one module (guest.ServeAll), alpha and beta,
//	               selected by name (host.SelectPlugin)
//	ignoreselect   exports warden_select by hand and ignores the selection
//	domaindeny     a tenant guard with a config: rejects a domain on its deny list
//	capsask        asks for effect.node and state.conversation (a tenant's grant)
//	unknownrole    declares a role the host does not know
//
// The extism* fixtures are the same guards written with the extism Go PDK
// (github.com/extism/go-pdk), for the extism loader:
//
//	extismgood        passes, or rejects when asked to
//	extismnoresult    returns without a result
//	extismpanic       panics in the handler
//	extismloop        loops forever in the handler
//	extismbadpointer  passes an offset the host cannot read
//	extismsandbox     reads the clock, environment, files, config and network
package testdata
