package testdata

import (
	"context"
	"encoding/json"
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
		p.p, p.err = h.Load(context.Background(), src, host.Policy{})
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
