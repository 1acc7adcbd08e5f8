package evidence_test

import (
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/plugins/guards/evidence"
)

// fixed is the clock both builds see in tests.
var fixed = time.Date(2026, 3, 1, 8, 30, 0, 0, time.UTC)

var pair = testdata.NewPair(evidence.Plugin, "./plugins/guards/evidence/cmd", fixed)

// wasmPlugin is the wasm build, loaded once per test binary.
func wasmPlugin(tb testing.TB) *host.Plugin { return pair.Wasm(tb) }

func native(tb testing.TB) *guest.Native { return pair.Native(tb) }

// both runs req natively and as wasm, requires byte-identical verdicts
// (effects included) and returns the verdict.
func both(t *testing.T, req []byte) abi.Verdict { return pair.Both(t, req) }

func describe(v abi.Verdict, l abi.Locale) string { return testdata.Describe(v, l) }

func effects(v abi.Verdict) []string { return testdata.Effects(v) }
