// Package responsecontract is the ResponseContract guard (CONTRACT_SPEC
// §13 step 6, §6.1, §6.2; TOOL_USE_RELIABILITY §2.1, §2.3): after a business
// tool returned, it decides whether the call also succeeded for the
// business.
//
// Only a SUCCESS from the invoker is judged; any other result passes
// unchanged. The guest judges the response with the contract's success and
// error (contract.Tool.Judge, the contract memoised per text): a tool without
// success is ok whatever it returned, and an empty response fails a
// configured success. A business failure becomes FAILED
// TOOL_BUSINESS_FAILED with the downstream code in the reason
// ("业务失败 [system.50001]：…", TOOL_OBSERVATION §7.1) and NEXT_BUSINESS,
// carrying the response as data.
//
// When the tool declares an output schema (MCP outputSchema) and the
// business judgement passed, the response is validated against it by the
// host's validator; a mismatch is FAILED OUTPUT_SCHEMA_MISMATCH naming every
// failing field, with NEXT_CHANGE_STRATEGY: the model cannot repair a
// tool's output by fixing its own arguments, so it is sent to another way
// rather than told to retry. A business failure is checked first because an
// error response rarely has the success shape. An output schema that is
// itself invalid is the tool's declaration problem, not the response's: the
// guard logs it and passes.
package responsecontract

import (
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/plugins/guards/internal/envelope"
)

// Plugin is the ResponseContract guard.
var Plugin = guest.Plugin{
	Manifest: abi.Manifest{
		Name: "responsecontract", Version: "1.0.0", ABI: abi.Version, Role: abi.RoleGuard,
		Description: "judges a tool's response with the contract's success/error and its output schema",
		Phases:      []abi.Phase{abi.PhaseAfter},
	},
	Handle: handle,
}

func handle(c *guest.Call) {
	if c.Get(abi.FieldResult+".outcome").String() != "SUCCESS" {
		c.Pass(nil)
		return
	}
	ok, reason, err := envelope.Judge(c)
	if err != nil {
		panic(err) // the host turns it into a trap: the guard fails closed
	}
	if !ok {
		c.Failed(abi.ToolBusinessFailed, reason, abi.NextBusiness.Text(c.Locale()), []byte(c.Get(abi.FieldResponse).Raw))
		return
	}
	if !c.Has(abi.FieldOutSchema) {
		c.Pass(nil)
		return
	}
	errs, err := c.Validate(abi.FieldOutSchema, abi.FieldResponse)
	if err != nil {
		c.Log(err.Error())
		c.Pass(nil)
		return
	}
	if len(errs) == 0 {
		c.Pass(nil)
		return
	}
	l := c.Locale()
	sep := "；"
	if l == abi.LocaleEN {
		sep = "; "
	}
	problems := make([]string, len(errs))
	for i, e := range errs {
		problems[i] = e.Error()
	}
	c.Failed(abi.OutputSchemaMismatch, abi.OutputSchemaMismatch.Reason(l, "tool", c.Tool(), "detail", strings.Join(problems, sep)),
		abi.NextChangeStrategy.Text(l), []byte(c.Get(abi.FieldResponse).Raw))
}
