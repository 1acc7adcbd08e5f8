// Package envelope reads what the first-party guards decide on from a
// guard call's request envelope, inside the guest: the tool's contract
// (parsed once per distinct text and memoised), the arguments the guard
// works on, a contract.Scope over the state views, and the value equality of
// CONTRACT_SPEC §5.3. It decides nothing itself; the guards do.
//
// It reads through a Reader: in a guard the *guest.Call, whose Get has the
// host evaluate each path natively and copies in only the value (scanning a
// large envelope byte by byte inside the guest is what costs most there);
// in tests Bytes, gjson over the envelope's bytes. Both give the same
// values.
package envelope

import (
	"fmt"
	"strings"
	"sync"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/contract"
	"github.com/tidwall/gjson"
)

// Reader reads a gjson path of a request envelope; *guest.Call is one.
type Reader interface {
	Get(path string) gjson.Result
}

// Bytes is a Reader over an envelope's bytes.
type Bytes []byte

// Get reads a gjson path of the envelope.
func (b Bytes) Get(path string) gjson.Result { return gjson.GetBytes(b, path) }

// Get reads a gjson path of the envelope.
func Get(req Reader, path string) gjson.Result { return req.Get(path) }

// Locale is the language of model-facing texts for the call.
func Locale(req Reader) abi.Locale { return abi.ParseLocale(Get(req, abi.FieldLocale).String()) }

// Args returns the arguments a guard works on: the bound arguments when an
// earlier guard rewrote them, else the model's; absent when neither is set.
func Args(req Reader) gjson.Result {
	if b := Get(req, abi.FieldBound); b.Exists() {
		return b
	}
	return Get(req, abi.FieldArgs)
}

// ArgsPath is the envelope path of Args: "bound" when set, else "args".
func ArgsPath(req Reader) string {
	if Get(req, abi.FieldBound).Exists() {
		return abi.FieldBound
	}
	return abi.FieldArgs
}

// Response is the raw response of an after-phase request; nil when there is
// none.
func Response(req Reader) []byte {
	r := Get(req, abi.FieldResponse)
	if !r.Exists() {
		return nil
	}
	return []byte(r.Raw)
}

// StatePath is the envelope path of a state view, with an optional sub-path.
func StatePath(view abi.Capability, sub string) string {
	p, ok := statePaths[view]
	if !ok {
		p = abi.FieldState + "." + strings.ReplaceAll(string(view), ".", `\.`)
	}
	if sub != "" {
		p += "." + sub
	}
	return p
}

// statePaths are the paths of the known views, made once.
var statePaths = func() map[abi.Capability]string {
	m := map[abi.Capability]string{}
	for _, c := range abi.AllCapabilities() {
		m[c] = abi.FieldState + "." + strings.ReplaceAll(string(c), ".", `\.`)
	}
	return m
}()

// Hasher is a Reader that also hashes a value's raw text (guest.Call.Hash):
// the contract memo then finds a contract by its digest, without copying
// the contract's text into the guest.
type Hasher interface {
	Reader
	Hash(path string) ([32]byte, bool)
}

// Declared returns the parsed contract of the request's tool, or nil when
// the request carries none (absent or null).
func Declared(req Reader) (*contract.Tool, error) {
	if c, ok := req.(*guest.Call); ok { // a type compare; an interface assertion costs more in wasm
		return hashed(c, true)
	}
	if h, ok := req.(Hasher); ok {
		return hashed(h, true)
	}
	return declared(req)
}

func declared(req Reader) (*contract.Tool, error) {
	raw := Get(req, abi.FieldContract)
	if !raw.Exists() || raw.Type == gjson.Null {
		return nil, nil
	}
	return parse(Get(req, abi.FieldTool).String(), raw)
}

// Tool parses the request's contract (the skill's tools.<name> object) with
// the contract package. A request without a contract object gets the
// contract of an unconfigured tool: NONE, no success, no extracts
// (CONTRACT_SPEC §1.3). It is parsed on its own (contract.ParseTool): verify
// and fallback name other tools of the skill, which the request does not
// carry.
//
// The parse is memoised by the tool's name and the contract's text: a
// skill's contract is the same for every call of the tool, and parsing it is
// most of a guard's work. Parsing is a pure function of its key, so the memo
// changes nothing a decision sees; the result is shared and only read.
func Tool(req Reader) (*contract.Tool, error) {
	if c, ok := req.(*guest.Call); ok {
		return hashed(c, false)
	}
	if h, ok := req.(Hasher); ok {
		return hashed(h, false)
	}
	return Parse(Get(req, abi.FieldTool).String(), Get(req, abi.FieldContract))
}

// hashed is Declared (declared true) or Tool through a Hasher: the parsed
// contract is memoised by the tool's name and the SHA-256 of the
// contract's raw text, so a call whose contract was seen before copies
// only the 32 bytes of its digest into the guest. The first call with a
// contract reads and parses it as Declared and Tool do, and its result —
// nil for an absent or null contract in Declared's sense included — is
// what later calls with the same name and digest get.
func hashed(req Hasher, declaredSense bool) (*contract.Tool, error) {
	// req's own methods: passing req on as a Reader converts it, which
	// costs a runtime lookup inside a guest.
	name := req.Get(abi.FieldTool).String()
	sum, ok := req.Hash(abi.FieldContract)
	if !ok { // no contract
		if declaredSense {
			return nil, nil
		}
		return parse(name, gjson.Result{})
	}
	var kind byte = 't'
	if declaredSense {
		kind = 'd'
	}
	memo.Lock()
	if l := &memo.last; l.set && l.kind == kind && l.sum == sum && l.name == name {
		t := l.t
		memo.Unlock()
		return t, nil
	}
	memo.key = append(append(append(append(memo.key[:0], kind), name...), 0), sum[:]...)
	t, hit := memo.byHash[string(memo.key)]
	if hit {
		memo.last = lastParse{set: true, kind: kind, name: name, sum: sum, t: t}
	}
	memo.Unlock()
	if hit {
		return t, nil
	}
	key := string(kind) + name + "\x00" + string(sum[:])
	var err error
	if declaredSense {
		t, err = declared(req)
	} else {
		t, err = parse(name, req.Get(abi.FieldContract))
	}
	if err != nil {
		return nil, err
	}
	memo.Lock()
	if len(memo.byHash) >= MemoSize {
		clear(memo.byHash)
	}
	memo.byHash[key] = t
	memo.last = lastParse{set: true, kind: kind, name: name, sum: sum, t: t}
	memo.Unlock()
	return t, nil
}

// Parse is Tool for a guard that has read the tool's name and contract
// already.
func Parse(name string, raw gjson.Result) (*contract.Tool, error) { return parse(name, raw) }

func parse(name string, raw gjson.Result) (*contract.Tool, error) {
	if !raw.IsObject() {
		return &contract.Tool{Name: name, SideEffect: contract.SideEffectNone}, nil
	}
	memo.Lock()
	if l := &memo.lastText; l.t != nil && l.name == name && l.raw == raw.Raw {
		t := l.t
		memo.Unlock()
		return t, nil
	}
	memo.key = append(append(append(memo.key[:0], name...), 0), raw.Raw...)
	t, ok := memo.m[string(memo.key)]
	if cap(memo.key) > 1<<16 {
		memo.key = nil
	}
	if ok {
		// copied: raw may alias a buffer its caller reuses
		memo.lastText = lastText{name: name, raw: strings.Clone(raw.Raw), t: t}
	}
	memo.Unlock()
	if ok {
		return t, nil
	}
	key := name + "\x00" + raw.Raw
	parseName := name
	if parseName == "" {
		parseName = "tool"
	}
	t, err := contract.ParseTool(parseName, []byte(raw.Raw))
	if err != nil {
		return nil, fmt.Errorf("envelope: contract of tool %q: %w", name, err)
	}
	memo.Lock()
	if len(memo.m) >= MemoSize {
		clear(memo.m)
	}
	memo.m[key] = t
	memo.lastText = lastText{name: name, raw: key[len(name)+1:], t: t}
	memo.Unlock()
	return t, nil
}

// MemoSize bounds the parsed contracts a guest keeps: a skill has a few
// dozen tools, and a full memo starts over rather than grow with what
// tenants send.
const MemoSize = 64

// memo is locked because the native build of a guard may run on many
// goroutines; in wasm the lock is never contended.
var memo = struct {
	sync.Mutex
	m   map[string]*contract.Tool
	key []byte // the key being looked up, reused so a hit allocates nothing
	// byHash finds a parse by the sense it was asked in, the tool's name
	// and the contract's digest (hashed).
	byHash map[string]*contract.Tool
	last   lastParse // the last one found or made by hashed
	// lastText is parse's last answer, compared with the text before the
	// map is hashed (a contract's text hashes slowly inside a guest)
	lastText lastText
}{m: map[string]*contract.Tool{}, byHash: map[string]*contract.Tool{}}

// lastParse is hashed's last answer, checked before the map: a chain
// calls one tool many times in a row.
type lastParse struct {
	set  bool
	kind byte
	name string
	sum  [32]byte
	t    *contract.Tool
}

// lastText is parse's last answer and the name and text it was for.
type lastText struct {
	name, raw string
	t         *contract.Tool
}

// Parsed reports how many contracts the memo holds (for tests).
func Parsed() int {
	memo.Lock()
	defer memo.Unlock()
	return len(memo.m)
}
