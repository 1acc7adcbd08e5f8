package extismguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/host/plugintest"
)

// Example builds the extism-PDK guard in cmd/, loads it like any other
// plugin and runs two guard decisions through it.
func Example() {
	path, err := plugintest.Build("./cmd")
	if err != nil {
		log.Fatal(err)
	}
	bin, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	h, err := host.New(host.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close(ctx)
	p, err := h.Load(ctx, host.Source{Name: "extism-guard", Bytes: bin, SHA256: host.Digest(bin)},
		host.Policy{Config: json.RawMessage(`{"maxAmount":100}`)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Ref(), "loaded through", p.Loader())

	for _, args := range []string{`{"amount":42}`, `{"amount":250}`} {
		v := p.Guard(ctx, "tenant", &abi.Request{Phase: abi.PhaseBefore, Tool: "pay", Args: json.RawMessage(args), Locale: abi.LocaleEN})
		if v.Pass {
			fmt.Println(args, "-> pass")
			continue
		}
		fmt.Println(args, "->", v.Observation.Outcome, v.Observation.Code, v.Observation.Message())
	}
	// Output:
	// amount-limit@1.0.0 loaded through extism
	// {"amount":42} -> pass
	// {"amount":250} -> REJECTED ARG_REJECTED amount 250 is over the limit of 100. Next: ask the user to confirm a smaller amount (at most 100)
}
