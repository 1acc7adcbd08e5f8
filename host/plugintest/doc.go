// Package plugintest is the conformance kit for Warden plugins: checks a
// guard or builtin author runs from their own go test, and that
// `warden plugin test` runs from the command line.
//
// Run loads the module on a real host and reports each check as a subtest:
//
//	load          the module loads: digest pin, exports, imports, ABI
//	              version, a strictly valid manifest, limits, config
//	manifest      name and version; a guard's phases; a builtin's tools each
//	              have a description and an object input schema that the
//	              host's validator compiles; the configSchema compiles
//	config        Options.Policy.Config matches the configSchema
//	case/<name>   each author case: the verdict came through a factory (no
//	              contract violation, trap or timeout), its observation
//	              validates, and it is what the case wants
//	probe/<phase>/<tool>/<probe> (guards), probe/<tool>/<probe> (builtins)
//	              the kit's own requests. A guard runs on every call of the
//	              skills it is attached to, so it is probed in each phase it
//	              declares on each tool its author's cases name (starting
//	              from that tool's first case: its contract, schema, config)
//	              and on the kit's own read tool (ProbeReadTool) and write
//	              tool (ProbeWriteTool, a WRITE contract with confirm,
//	              idempotencyKey, success and error); a builtin on each tool
//	              it provides. Each target gets the probes a slot's load
//	              check (host.Probes) sends every candidate generation too:
//	              empty arguments, arguments that are not an object,
//	              unparsable arguments (argsText only), an unknown tool, no
//	              contract and no config, arguments nested 1000 levels deep,
//	              an argument object with thousands of keys, unicode at its
//	              edges (lone surrogates, NUL, U+2028, bidi overrides,
//	              noncharacters, emoji sequences, empty and non-ASCII keys),
//	              argument text that is not UTF-8, a request of exactly the
//	              input limit and, after the call, a result whose data and
//	              response fill the input limit. Each must end in a valid
//	              result (a pass, a success, or a non-success with a
//	              registered code that is not the host's own, a reason and a
//	              next step), never a trap, a timeout or a contract
//	              violation.
//	deterministic every request sent again, in reverse order on the same
//	              instance, gives the same verdict, since a plugin keeps no
//	              state between calls (for a plugin granted the real clock
//	              or randomness, only failures count)
//	concurrent    every request sent from two goroutines at once gives the
//	              same verdict again
//	limits        no call hit the deadline, the output limit or the memory
//	              limit (from the plugin's metrics)
//
// The kit calls the plugin as the host's Guard and Builtin do, but without
// the failure policy, so a failure is reported as what the plugin did
// (`plugin trapped (PLUGIN_TRAP): panic: boom`) rather than as the REJECTED
// observation a fail-closed guard would turn it into. The probes of a tool
// start from its first author case, so giving one case with a realistic
// contract and schema per tool makes every probe of it realistic too.
//
// Cases can also live in a cases file (YAML or JSON, see LoadCases and
// docs/PLUGINS.md), which `warden plugin test --cases FILE` runs and a go
// test passes to Run:
//
//	cf, err := plugintest.LoadCases("cases.yaml")
//	...
//	plugintest.Run(t, plugintest.Module(t, "./cmd"), plugintest.Options{
//		Cases: cf.Cases, Policy: host.Policy{Config: cf.Config}})
//
// A guard author's test, with the module built by `warden plugin build`:
//
//	func TestConformance(t *testing.T) {
//		wasm, err := os.ReadFile("mycheck.wasm")
//		if err != nil {
//			t.Fatal(err)
//		}
//		plugintest.Run(t, wasm, plugintest.Options{
//			Policy: host.Policy{Config: json.RawMessage(`{"strict":true}`)},
//			Cases: []plugintest.Case{
//				{
//					Name: "allowed",
//					Request: abi.Request{Phase: abi.PhaseBefore, Tool: "create_site",
//						Args: json.RawMessage(`{"name":"a"}`)},
//					Want: plugintest.WantPass(),
//				},
//				{
//					Name: "missing name",
//					Request: abi.Request{Phase: abi.PhaseBefore, Tool: "create_site",
//						Args: json.RawMessage(`{}`)},
//					Want: plugintest.WantOutcome(abi.OutcomeRejected, abi.ArgRejected),
//				},
//			},
//		})
//	}
//
// Check runs the same checks without a testing.T and returns a Report.
package plugintest
