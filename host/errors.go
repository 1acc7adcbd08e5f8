package host

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentwarden/warden/abi"
)

// ErrDigestMismatch is returned when a module's sha256 differs from its pin.
var ErrDigestMismatch = errors.New("module digest does not match its pin")

// ErrNotAPlugin is returned for a module that exports neither Warden ABI.
var ErrNotAPlugin = errors.New("module is not a warden plugin")

// ErrCommandModule is returned for a module built as a WASI command (it
// exports _start and not _initialize): its runtime is never initialized
// before the host calls its exports, so it must be rebuilt as a reactor.
var ErrCommandModule = errors.New("module is built as a command, not a reactor")

// ErrCompile is returned for a module wazero cannot compile within the limits.
var ErrCompile = errors.New("module does not compile")

// ErrABIVersion is returned for a plugin built for another ABI version.
var ErrABIVersion = errors.New("unsupported ABI version")

// ErrManifest is returned for a missing, malformed or unacceptable manifest.
var ErrManifest = errors.New("bad plugin manifest")

// ErrImportDenied is returned for a module importing a host function Warden
// does not provide.
var ErrImportDenied = errors.New("module imports a function the host does not provide")

// ErrNotGranted is returned for a plugin whose manifest asks for a
// capability its Policy does not grant (see GrantError).
var ErrNotGranted = errors.New("plugin asks for capabilities it is not granted")

// GrantError is a plugin refused because its manifest asks for more than
// whoever loads it grants. errors.Is matches ErrNotGranted.
type GrantError struct {
	Plugin string // name@version
	// Asked is everything the manifest asks for, Excess what of it is not
	// granted, Granted the grant.
	Asked, Excess, Granted []abi.Capability
}

func (e *GrantError) Error() string {
	return fmt.Sprintf("%v: %s asks for %s; it may have %s (not granted: %s)",
		ErrNotGranted, e.Plugin, capList(e.Asked), capList(e.Granted), capList(e.Excess))
}

// Is matches ErrNotGranted.
func (e *GrantError) Is(target error) bool { return target == ErrNotGranted }

func capList(cs []abi.Capability) string {
	if len(cs) == 0 {
		return "none"
	}
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

// ErrLimits is returned when a plugin wants more than the policy allows.
var ErrLimits = errors.New("plugin limits exceed the policy")

// ErrConfig is returned when a plugin's config does not match its schema.
var ErrConfig = errors.New("plugin config rejected")

// ErrLoad is returned when the pre-warm instance fails to start.
var ErrLoad = errors.New("plugin failed to start")

// ErrModuleTooLarge is returned for a module over Options.MaxModuleBytes.
var ErrModuleTooLarge = errors.New("module too large")

// ErrClosed is returned for calls on a closed plugin or host.
var ErrClosed = errors.New("plugin closed")

// ErrTrap is returned when a plugin trapped (panic, unreachable, exit).
var ErrTrap = errors.New("plugin trapped")

// ErrTimeout is returned when a plugin call passed its deadline.
var ErrTimeout = errors.New("plugin timed out")

// ErrMemoryLimit is returned when a plugin ran out of its memory limit.
var ErrMemoryLimit = errors.New("plugin memory limit")

// errHostMemory ends a call whose host services spent more host memory than
// the plugin's memory limit; the call is classified as ErrMemoryLimit.
var errHostMemory = errors.New("host services over the plugin's memory limit")

// errCallVoid ends a call a host function voided (a refused input, an
// answer over the output limit): the guest does not run on, and the call
// is classified by the violation its recorder holds.
var errCallVoid = errors.New("host function ended a void call")

// ErrViolation is returned when a plugin broke the result contract.
var ErrViolation = errors.New("plugin contract violation")

// ErrInputTooLarge is returned for a request over the plugin's input limit.
var ErrInputTooLarge = errors.New("request too large for plugin")

// ErrUnavailable is returned when no instance could be had for a call.
var ErrUnavailable = errors.New("plugin unavailable")

// ErrCanceled is returned when the caller's context ended the call.
var ErrCanceled = errors.New("plugin call canceled")

// ErrWrongRole is returned when a guard is called as a builtin or the other way.
var ErrWrongRole = errors.New("plugin called in the wrong role")

// CallError is a failed plugin call. Code is the observation code it maps to;
// errors.Is matches the sentinel in Kind and the wrapped cause.
type CallError struct {
	Plugin string
	Code   abi.Code
	Kind   error // one of ErrTrap, ErrTimeout, ErrMemoryLimit, ErrViolation, ...
	Detail string
	// Violation is set when Kind is ErrViolation.
	Violation *abi.Violation
	// Stderr is what the guest wrote to stderr (bounded), for logs only.
	Stderr string
	Err    error
}

func (e *CallError) Error() string {
	s := fmt.Sprintf("host: %s: %v", e.Plugin, e.Kind)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is matches the kind sentinel.
func (e *CallError) Is(target error) bool { return target == e.Kind }

// Unwrap returns the underlying cause.
func (e *CallError) Unwrap() error { return e.Err }

// ErrLoadCheck is returned when a candidate failed the load check: it
// trapped, timed out or broke the contract on a request a tenant could send,
// or answered the same request twice differently.
var ErrLoadCheck = errors.New("plugin failed the load check")

// ErrCompileWorker is returned when the compile worker that was to compile
// a module ran and failed (crashed, timed out, or answered out of
// protocol): the module is refused, never compiled in the serving process
// instead.
var ErrCompileWorker = errors.New("compile worker failed")

// ErrSelect is returned when a module bound to one of its plugins
// (SelectPlugin) does not serve it: it serves one plugin only, it serves
// none of that name, or its manifest names another.
var ErrSelect = errors.New("module does not serve the selected plugin")
