package testdata

import (
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/host"
)

// Pair runs one plugin natively and as its wasm build, so a test can
// require both to decide alike. The wasm build is loaded once, on first use.
type Pair struct {
	plugin guest.Plugin
	pkg    string
	clock  time.Time

	once sync.Once
	p    *host.Plugin
	err  error
}

// NewPair prepares the plugin and the main package that builds it
// ("./plugins/guards/writegate/cmd"); both builds see the fixed clock.
func NewPair(plugin guest.Plugin, pkg string, clock time.Time) *Pair {
	return &Pair{plugin: plugin, pkg: pkg, clock: clock}
}

// Wasm returns the loaded wasm build.
func (p *Pair) Wasm(tb testing.TB) *host.Plugin {
	tb.Helper()
	p.once.Do(func() {
		h, err := host.New(host.Options{CacheDir: CacheDir(tb), Clock: func() time.Time { return p.clock }})
		if err != nil {
			p.err = err
			return
		}
		path, err := Build(p.pkg)
		if err != nil {
			p.err = err
			return
		}
		src, err := host.ReadSource(path, "")
		if err != nil {
			p.err = err
			return
		}
		// Granted what the in-process plugin declares: the two builds
		// must be the same plugin.
		p.p, p.err = h.Load(context.Background(), src, host.Policy{Capabilities: p.plugin.Manifest.Capabilities})
	})
	if p.err != nil {
		tb.Fatal(p.err)
	}
	return p.p
}

// Native returns a fresh in-process runner of the plugin.
func (p *Pair) Native(tb testing.TB) *guest.Native {
	tb.Helper()
	n, err := guest.NewNative(p.plugin, 0, guest.WithClock(func() time.Time { return p.clock }))
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// Both runs req natively and as wasm, requires byte-identical verdicts
// (effects included) and returns the verdict.
func (p *Pair) Both(t *testing.T, req []byte) abi.Verdict {
	t.Helper()
	ctx := context.Background()
	nv, err := p.Native(t).Call(ctx, req)
	if err != nil {
		t.Fatalf("native: %v", err)
	}
	wv, err := p.Wasm(t).Invoke(ctx, "t", req)
	if err != nil {
		t.Fatalf("wasm: %v", err)
	}
	nj, _ := json.Marshal(nv)
	wj, _ := json.Marshal(wv)
	if string(nj) != string(wj) {
		t.Fatalf("native and wasm differ:\nnative %s\nwasm   %s", nj, wj)
	}
	return nv
}

// Describe is a verdict as tests compare it: "PASS", "SUCCESS: message" or
// "OUTCOME CODE: message", in the locale.
func Describe(v abi.Verdict, l abi.Locale) string {
	if v.Pass {
		return "PASS"
	}
	o := *v.Observation
	o.Locale = l
	if o.Outcome == abi.OutcomeSuccess {
		return "SUCCESS: " + o.Message()
	}
	return o.Outcome.String() + " " + string(o.Code) + ": " + o.Message()
}

// Effects renders a verdict's effects as "kind payload" lines.
func Effects(v abi.Verdict) []string {
	var out []string
	for _, e := range v.Effects {
		out = append(out, e.Kind+" "+string(e.Payload))
	}
	return out
}

// Builtin is one builtin call and what it must produce, for CheckBuiltin.
type Builtin struct {
	Tool   string
	Args   string
	State  map[abi.Capability]any // a value is marshalled, or used as is when a string
	Locale abi.Locale

	Outcome abi.Outcome
	Code    abi.Code
	Message string
	Effects string // JSON array of {kind, payload}; "" = none
	Data    string // JSON; "" = none
}

// CheckBuiltin calls a builtin natively and through its wasm build,
// requires the same verdict from both, and checks it against c.
func (p *Pair) CheckBuiltin(t *testing.T, c Builtin) {
	t.Helper()
	ctx := context.Background()
	req := abi.Request{ABI: abi.Version, Kind: abi.RoleBuiltin, Tool: c.Tool, Args: json.RawMessage(c.Args), Locale: c.Locale,
		State: map[string]json.RawMessage{}}
	if !json.Valid([]byte(c.Args)) {
		// As the loop sends them: text that is not JSON travels as text.
		req.Args, req.ArgsText = nil, c.Args
	}
	for k, v := range c.State {
		b, ok := v.(string)
		raw := json.RawMessage(b)
		if !ok {
			var err error
			if raw, err = json.Marshal(v); err != nil {
				t.Fatal(err)
			}
		}
		req.State[string(k)] = raw
	}
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	n, err := guest.NewNative(p.plugin, 0)
	if err != nil {
		t.Fatal(err)
	}
	nv, err := n.Call(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if nv.Observation != nil {
		nv.Observation.Locale = c.Locale
	}
	wv := p.Wasm(t).Builtin(ctx, "t", &req)
	nj, _ := json.Marshal(nv)
	wj, _ := json.Marshal(wv)
	if string(nj) != string(wj) {
		t.Fatalf("native and wasm differ:\nnative %s\nwasm   %s", nj, wj)
	}
	o := nv.Observation
	if o == nil {
		t.Fatalf("no observation: %s", nj)
	}
	if o.Outcome != c.Outcome || o.Code != c.Code {
		t.Fatalf("got %v %s, want %v %s\n%s", o.Outcome, o.Code, c.Outcome, c.Code, nj)
	}
	if got := o.Message(); got != c.Message {
		t.Fatalf("message:\n got %q\nwant %q", got, c.Message)
	}
	var effects []byte
	if len(nv.Effects) > 0 {
		effects, _ = json.Marshal(nv.Effects)
	}
	SameJSON(t, "effects", effects, c.Effects)
	SameJSON(t, "data", o.Data, c.Data)
}

// SameJSON fails the test unless got and want are equal JSON ("" and an
// empty got both mean none).
func SameJSON(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	if len(got) == 0 || want == "" {
		if len(got) != 0 || want != "" {
			t.Fatalf("%s:\n got %s\nwant %s", what, got, want)
		}
		return
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v: %s", what, err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad expectation: %v", what, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s:\n got %s\nwant %s", what, got, want)
	}
}
