package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentwarden/warden/abi"
)

// The load check's probes, the last part of "<phase or tool>/<probe>". Each
// is what a tenant's model or tool can send a plugin, at the edges.
const (
	// ProbeEmptyArgs: arguments that are an empty object.
	ProbeEmptyArgs = "empty-args"
	// ProbeArgsNotObject: arguments that are JSON but not an object.
	ProbeArgsNotObject = "args-not-object"
	// ProbeArgsText: arguments that are not JSON at all (argsText only).
	ProbeArgsText = "args-text"
	// ProbeUnknownTool: a tool no plugin provides, without contract or schema.
	ProbeUnknownTool = "unknown-tool"
	// ProbeDeepArgs: arguments nested probeDepth levels deep.
	ProbeDeepArgs = "deep-args"
	// ProbeWideArgs: an argument object with very many keys.
	ProbeWideArgs = "wide-args"
	// ProbeUnicode: lone surrogates, NUL, line and paragraph separators,
	// bidi overrides, noncharacters, combining marks, emoji sequences,
	// empty and non-ASCII keys, and argument text that is not UTF-8.
	ProbeUnicode = "unicode"
	// ProbeNotUTF8: argument text that is not UTF-8, as the envelope
	// carries it (argsText, each bad byte made U+FFFD).
	ProbeNotUTF8 = "args-not-utf8"
	// ProbeNearMaxInput: a request of exactly the plugin's input limit.
	ProbeNearMaxInput = "near-input-limit"
	// ProbeBigResult: an after-phase request whose result data and raw
	// response fill the input limit (after-phase guards only).
	ProbeBigResult = "big-result"
)

// probeDepth is how deep the deep-args probe nests: far past any real
// argument, and past a parser with a small fixed stack. It stays well under
// the 10000 levels encoding/json accepts, because some services of the host
// cost the square of the depth: at 5000 levels a first-party guard needs
// half of its 1 s deadline, which a loaded machine turns into a refusal.
const probeDepth = 1000

// wideBytes bounds the wide-args probe: some 6000 keys.
const wideBytes = 64 << 10

// UnknownTool is the tool of the unknown-tool probe.
const UnknownTool = "warden_probe_unknown_tool"

// Probe is one request of the load check.
type Probe struct {
	// Name is one of the Probe* names.
	Name string
	// Request is what was sent; Raw is its envelope, at most the input limit.
	Request abi.Request
	Raw     []byte
	// Bad says why the probe could not be built (the base request is
	// already over the input limit); Raw is empty then.
	Bad string
}

// Probes builds the load check's requests from base, a complete request
// (ABI, Kind, Config set) of one phase or tool: each perturbs base as a
// tenant's traffic can, and none is over maxInput bytes.
func Probes(base abi.Request, maxInput int) []Probe {
	args := func(a json.RawMessage, text string) abi.Request {
		r := base
		r.Args, r.ArgsText, r.Bound, r.Provenance = a, text, nil, nil
		return r
	}
	unknown := args(json.RawMessage(`{}`), "")
	unknown.Tool, unknown.Contract, unknown.Schema, unknown.OutputSchema = UnknownTool, nil, nil, nil
	room := maxInput - envelopeSize(args(json.RawMessage(`{}`), ""))
	out := []Probe{
		{Name: ProbeEmptyArgs, Request: args(json.RawMessage(`{}`), "")},
		{Name: ProbeArgsNotObject, Request: args(json.RawMessage(`[1,"two",null]`), "")},
		{Name: ProbeArgsText, Request: args(nil, `{"unterminated": tru`)},
		{Name: ProbeUnknownTool, Request: unknown},
		{Name: ProbeDeepArgs, Request: args(deepArgs(probeDepth), "")},
		{Name: ProbeWideArgs, Request: args(wideArgs(min(room/4, wideBytes)), "")},
		unicodeProbe(base),
		{Name: ProbeNotUTF8, Request: args(nil, "\xff\xfe{\"name\":\"\xc3\x28\xed\xa0\x80\"}\xf4\x90\x80\x80")},
		nearLimit(args(nil, ""), maxInput),
	}
	if base.Kind == abi.RoleGuard && base.Phase == abi.PhaseAfter {
		out = append(out, bigResult(args(json.RawMessage(`{}`), ""), maxInput))
	}
	for i := range out {
		if out[i].Raw != nil || out[i].Bad != "" {
			continue
		}
		out[i].Raw = out[i].Request.AppendJSON(nil)
		if len(out[i].Raw) > maxInput {
			out[i].Bad = fmt.Sprintf("the request is %d bytes, over the %d-byte input limit", len(out[i].Raw), maxInput)
			out[i].Raw = nil
		}
	}
	return out
}

func envelopeSize(r abi.Request) int { return len(r.AppendJSON(nil)) }

// deepArgs nests objects and arrays in turn, depth levels in all.
func deepArgs(depth int) json.RawMessage {
	var b strings.Builder
	for range depth / 2 {
		b.WriteString(`{"d":[`)
	}
	b.WriteString(`0`)
	for range depth / 2 {
		b.WriteString(`]}`)
	}
	return json.RawMessage(b.String())
}

// wideArgs is an object of as many short keys as fit in about n bytes.
func wideArgs(n int) json.RawMessage {
	b := []byte{'{'}
	for i := 0; len(b) < n-16; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `"k`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `":`...)
		b = strconv.AppendInt(b, int64(i%10), 10)
	}
	return json.RawMessage(append(b, '}'))
}

func unicodeProbe(base abi.Request) Probe {
	r := base
	r.Args = json.RawMessage(`{"name":"\ud800 \udfff \udbff\udfff \u0000 a\u2028b\u2029c \u202eevil\u202c \ufeff \uffff \ufdd0 e\u0301\u0301 ` +
		"👩‍👩‍👧‍👦 🇺🇳 ﷽ 工具" + `","":"empty key","键":"值","\u0000":null,"nested":{"\ud83d\ude00":["\u001f","\"\\/"]}}`)
	r.ArgsText, r.Bound = "", nil
	r.Provenance = map[string]string{"name": "user \u2028 \ud7ff", "键": "\x00tool"}
	r.CallID = "call-\u2028-\U0010ffff"
	return Probe{Name: ProbeUnicode, Request: r}
}

// nearLimit pads r's arguments until its envelope is exactly maxInput bytes.
func nearLimit(r abi.Request, maxInput int) Probe {
	p := Probe{Name: ProbeNearMaxInput}
	r.Args = json.RawMessage(`{"warden_pad":""}`)
	pad := maxInput - envelopeSize(r)
	if pad < 0 {
		p.Bad = fmt.Sprintf("the base request is %d bytes, over the %d-byte input limit", maxInput-pad, maxInput)
		return p
	}
	r.Args = json.RawMessage(`{"warden_pad":"` + strings.Repeat("x", pad) + `"}`)
	p.Request, p.Raw = r, r.AppendJSON(nil)
	if len(p.Raw) != maxInput {
		p.Bad, p.Raw = fmt.Sprintf("could not size the request to the %d-byte input limit", maxInput), nil
	}
	return p
}

// bigResult gives r a successful result whose data, and a raw response,
// together fill what the input limit leaves: many small records, the shape
// a listing tool returns.
func bigResult(r abi.Request, maxInput int) Probe {
	res := abi.Success("ok", json.RawMessage(`[]`))
	r.Result, r.Response = &res, json.RawMessage(`{"items":[]}`)
	room := (maxInput - envelopeSize(r)) / 2
	if room < 64 {
		return Probe{Name: ProbeBigResult, Bad: fmt.Sprintf("no room under the %d-byte input limit for a result", maxInput)}
	}
	records := func(n int) []byte {
		b := []byte{'['}
		for i := 0; ; i++ {
			rec := `{"id":"item-` + strconv.Itoa(i) + `","n":` + strconv.Itoa(i) + `,"ok":true}`
			if len(b)+len(rec)+2 > n {
				break
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, rec...)
		}
		return append(b, ']')
	}
	data := records(room)
	res = abi.Success("ok", json.RawMessage(data))
	r.Result = &res
	r.Response = json.RawMessage(`{"items":` + string(records(room-len(`{"items":}`))) + `}`)
	return Probe{Name: ProbeBigResult, Request: r}
}

// probeBases are the requests the load check starts from: one per phase of
// a guard, one per tool of a builtin.
func (p *Plugin) probeBases() (names []string, bases []abi.Request) {
	m := p.manifest
	switch m.Role {
	case abi.RoleGuard:
		for _, ph := range m.Phases {
			b := abi.Request{ABI: abi.Version, Kind: abi.RoleGuard, Phase: ph, Tool: "probe_tool", Args: json.RawMessage(`{}`), Config: p.policy.Config}
			if ph == abi.PhaseAfter {
				res := abi.Success("ok", json.RawMessage(`{}`))
				b.Result, b.Response = &res, json.RawMessage(`{}`)
			}
			names, bases = append(names, string(ph)), append(bases, b)
		}
	case abi.RoleBuiltin:
		for _, t := range m.Tools {
			b := abi.Request{ABI: abi.Version, Kind: abi.RoleBuiltin, Tool: t.Name, Args: json.RawMessage(`{}`), Config: p.policy.Config,
				Schema: t.InputSchema}
			names, bases = append(names, t.Name), append(bases, b)
		}
	}
	return names, bases
}

// LoadCheck calls p the way tenants will, under its real limits, before it
// serves: every probe of every phase its manifest declares (or tool it
// provides), one after the other on one instance, then all again in reverse
// order. It refuses (an error wrapping ErrLoadCheck and the failure's kind)
// a plugin that traps, times out, runs out of memory or output, breaks the
// result contract or answers the same request twice differently; what it
// decides about a probe does not matter, that it decides does. The second
// round runs every request after another predecessor than the first, so
// state that leaks from one call into the next shows as well. A plugin
// granted the real clock or randomness may answer differently each time
// (a timestamp, a UUID), so only its failures count.
func (p *Plugin) LoadCheck(ctx context.Context) error {
	var probes []Probe
	targets, bases := p.probeBases()
	for i, base := range bases {
		for _, pr := range Probes(base, p.limits.MaxInputBytes) {
			pr.Name = targets[i] + "/" + pr.Name
			if pr.Bad == "" {
				probes = append(probes, pr)
			}
		}
	}
	first := make([]abi.Verdict, len(probes))
	for i, pr := range probes {
		v, err := p.probe(ctx, pr.Raw)
		if err != nil {
			return p.refuse(pr.Name, err)
		}
		first[i] = v
	}
	same := !p.granted(abi.CapClock) && !p.granted(abi.CapRandom)
	for i := len(probes) - 1; i >= 0; i-- {
		v, err := p.probe(ctx, probes[i].Raw)
		if err != nil {
			return p.refuse(probes[i].Name, err)
		}
		if a, b := verdictKey(first[i]), verdictKey(v); same && a != b {
			sa, sb := verdictShort(first[i]), verdictShort(v)
			if sa == sb {
				sa, sb = truncate(a, 200), truncate(b, 200)
			}
			return fmt.Errorf("host: %s: %w: %s: the same request answered %s, then %s", p.ref, ErrLoadCheck, probes[i].Name, sa, sb)
		}
	}
	return nil
}

// probe sends one load-check request. A probe that runs out of time is
// sent once more before it counts: the check runs while the host starts or
// installs, when a loaded machine can starve a call of the CPU its limit
// assumes, and a plugin that loops runs out of time both times.
func (p *Plugin) probe(ctx context.Context, raw []byte) (abi.Verdict, error) {
	v, err := p.Invoke(ctx, ProbeTenant, raw)
	if errors.Is(err, ErrTimeout) && ctx.Err() == nil {
		v, err = p.Invoke(ctx, ProbeTenant, raw)
	}
	return v, err
}

func (p *Plugin) refuse(probe string, err error) error {
	var ce *CallError
	if !errors.As(err, &ce) {
		return fmt.Errorf("host: %s: %w: %s: %w", p.ref, ErrLoadCheck, probe, err)
	}
	return fmt.Errorf("host: %s: %w: %s: %w (%s): %s", p.ref, ErrLoadCheck, probe, ce.Kind, ce.Code, FailureDetail(ce))
}

// FailureDetail says in a line what a failed call's plugin did: "no result
// within 50ms", "panic: boom", "the call ended without a result".
func FailureDetail(ce *CallError) string {
	switch {
	case errors.Is(ce, ErrTimeout):
		return "no result within " + ce.Detail
	case ce.Code == abi.PluginOutputTooLarge && ce.Violation != nil:
		return "over the output limit of " + ce.Violation.Detail + " bytes"
	case ce.Detail != "":
		return ce.Detail
	case ce.Err != nil:
		return truncate(ce.Err.Error(), 200)
	}
	return ce.Kind.Error()
}

func verdictKey(v abi.Verdict) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "unencodable verdict: " + err.Error()
	}
	return string(b)
}

func verdictShort(v abi.Verdict) string {
	switch o := v.Observation; {
	case v.Pass:
		return "pass"
	case o == nil:
		return "no result"
	case o.Outcome == abi.OutcomeSuccess:
		return "SUCCESS"
	default:
		return o.Outcome.String() + " " + string(o.Code)
	}
}
