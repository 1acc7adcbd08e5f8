package responsecontract_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/plugins/guards/responsecontract"
)

// fixed is the clock both builds see in tests.
var fixed = time.Date(2026, 3, 1, 8, 30, 0, 0, time.UTC)

var loaded struct {
	sync.Once
	p   *host.Plugin
	err error
}

// wasmPlugin loads the wasm build once per test binary.
func wasmPlugin(tb testing.TB) *host.Plugin {
	tb.Helper()
	loaded.Do(func() {
		h, err := host.New(host.Options{CacheDir: testdata.CacheDir(tb), Clock: func() time.Time { return fixed }})
		if err != nil {
			loaded.err = err
			return
		}
		path, err := testdata.Build("./plugins/guards/responsecontract/cmd")
		if err != nil {
			loaded.err = err
			return
		}
		src, err := host.ReadSource(path, "")
		if err != nil {
			loaded.err = err
			return
		}
		loaded.p, loaded.err = h.Load(context.Background(), src, host.Policy{})
	})
	if loaded.err != nil {
		tb.Fatal(loaded.err)
	}
	return loaded.p
}

func native(tb testing.TB) *guest.Native {
	tb.Helper()
	n, err := guest.NewNative(responsecontract.Plugin, 0, guest.WithClock(func() time.Time { return fixed }))
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// both runs req natively and as wasm, requires byte-identical verdicts
// (effects included) and returns the verdict.
func both(t *testing.T, req []byte) abi.Verdict {
	t.Helper()
	ctx := context.Background()
	nv, err := native(t).Call(ctx, req)
	if err != nil {
		t.Fatalf("native: %v", err)
	}
	wv, err := wasmPlugin(t).Invoke(ctx, "t", req)
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

// describe is the verdict as a test compares it: "PASS" or
// "OUTCOME CODE: message".
func describe(v abi.Verdict, l abi.Locale) string {
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

// effects renders the effects as "kind payload" lines.
func effects(v abi.Verdict) []string {
	var out []string
	for _, e := range v.Effects {
		out = append(out, e.Kind+" "+string(e.Payload))
	}
	return out
}
